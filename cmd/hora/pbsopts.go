package main

import "hora/sbatch"

// The getopt tables and usage texts of the PBS commands other than qsub
// (whose table is sbatch.QsubOptions) and qstat (qstatOpts). The commands
// parse with them and their man pages are built from them (gendoc_pbs.go).

// pbsOptLetters are each command's options, getopt style: a letter
// followed by ':' takes a value.
var pbsOptLetters = map[string]string{
	"qdel":     "W:xpm:t:",
	"qhold":    "h:t:",
	"qrls":     "h:t:",
	"qsig":     "s:a",
	"qrerun":   "W:",
	"qalter":   "a:A:c:e:E:h:j:k:l:m:M:N:o:p:r:R:S:u:W:P:",
	"qselect":  "u:s:N:q:l:xHA:h:TJtr:",
	"pbsnodes": "alocrC:N:F:vSjLqxs:",
}

// pbsFixedOpts is the getopt table of prog, the same in both flavours.
func pbsFixedOpts(prog string) []sbatch.Opt { return sbatch.LetterOpts(pbsOptLetters[prog]) }

const qalterUsage = "usage: qalter [-a date_time] [-A account_string] [-c interval] [-e path]\n" +
	"\t[-h hold_list] [-j y|n] [-k keep] [-l resource_list]\n" +
	"\t[-m mail_options] [-M user_list] [-N jobname] [-o path] [-p priority]\n" +
	"\t[-R o|e|oe] [-r y|n] [-S path] [-u user_list] [-W dependency_list]\n" +
	"\t[-P project_name] job_identifier...\n" +
	"       qalter --version\n"

const qselectUsage = "usage: qselect [-a [op]date_time] [-A account_string] [-c [op]interval] [-h hold_list]\n" +
	"\t[-H] [-J] [-l resource_list] [-N name] [-p [op]priority] [-q destination]\n" +
	"\t[-r y|n] [-s states] [-t [op]date_time] [-T] [-u user_name] [-x]\n" +
	"       qselect --version\n"

const pbsnodesUsage = "usage:\tpbsnodes [-{c|d|l|o|r}] [-s server] [-C \"comment\"] node ...\n\tpbsnodes -a [-s server] [-F json|dsv] [node ...]\n"

// qstatUsage is qstat's usage text in a flavour.
func qstatUsage(flavour string) string {
	if flavour == sbatch.FlavourTorque {
		return torqueQstatUsage
	}
	return openpbsQstatUsage
}
