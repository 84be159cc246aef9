package config

import (
	"bytes"
	"fmt"
	"strings"
)

// ManDate is the date printed in the footer of hora.toml(5); it changes when
// the page's content does (doc_test.go regenerates man/hora.toml.5).
const ManDate = "2026-11-27"

// Roff escapes plain text for a man(7) page: backslashes, hyphens (so that
// options are copied as ASCII minus signs) and a control character at the
// start of a line.
func Roff(s string) string {
	s = strings.ReplaceAll(s, `\`, `\e`)
	s = strings.ReplaceAll(s, "-", `\-`)
	var b strings.Builder
	for i, l := range strings.Split(s, "\n") {
		if i > 0 {
			b.WriteByte('\n')
		}
		if strings.HasPrefix(l, ".") || strings.HasPrefix(l, "'") {
			b.WriteString(`\&`)
		}
		b.WriteString(l)
	}
	return b.String()
}

// RoffText escapes plain text like Roff and lays it out as mandoc likes:
// each sentence on a new line, lines at most 78 bytes.
func RoffText(s string) string {
	var lines []string
	for _, para := range strings.Split(s, "\n") {
		line := ""
		words := strings.Fields(para)
		for i, w := range words {
			w = Roff(w)
			switch {
			case line == "":
				line = w
			case len(line)+1+len(w) > 78:
				lines = append(lines, line)
				line = w
			default:
				line += " " + w
			}
			// a sentence ends: the next one starts a line
			if strings.HasSuffix(w, ".") && i+1 < len(words) && len(w) > 2 {
				lines = append(lines, line)
				line = ""
			}
		}
		if line != "" {
			lines = append(lines, line)
		}
	}
	out := strings.Join(lines, "\n")
	out = strings.ReplaceAll(out, "\n.", "\n\\&.")
	out = strings.ReplaceAll(out, "\n'", "\n\\&'")
	if strings.HasPrefix(out, ".") || strings.HasPrefix(out, "'") {
		out = `\&` + out
	}
	return out
}

// ManPage renders hora.toml(5) from Keys.
func ManPage() []byte {
	var b bytes.Buffer
	p := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	p(`.\" Generated from config/doc.go by config's TestManPage -update; do not edit.`)
	p(`.TH HORA.TOML 5 %s hora "File Formats"`, ManDate)
	p(".SH NAME")
	p(`hora.toml \- configuration file of the hora batch controller`)
	p(".SH SYNOPSIS")
	p(".I /etc/hora/hora.toml")
	p(".SH DESCRIPTION")
	p(".BR horad (8)")
	p("reads its cluster, partitions, nodes and limits from a TOML file given with")
	p(`.BR \-\-config .`)
	p("%s", RoffText("The file is strict: an unknown key, a key of the wrong type or an invalid value "+
		"is an error that names the file, the line and the key; horad reports every problem at once and "+
		"does not start. Without a file horad runs a single machine: four local nodes local[1-4] in "+
		"partition batch, state in ./var."))
	p(".PP")
	p("On SIGHUP")
	p(`(\fBsystemctl reload horad\fP)`)
	p("%s", RoffText("horad reads the file again and applies nodes, partitions, limits and operators "+
		"without dropping a job; a file with errors is refused, logged with file:line, and the running "+
		"configuration stays. state_dir, socket and executor take effect only at the next start."))
	p(".PP")
	p("%s", RoffText("Durations are strings in Slurm's --time syntax, or integers of seconds where the key ends in _s."))
	p("Each key below is listed with its type and the value used when it is absent.")
	for _, sec := range docSections {
		p(".SH %s", sec.Title)
		p("%s", RoffText(sec.Intro))
		for _, k := range Keys {
			top, _, nested := strings.Cut(k.Key, ".")
			if sec.Prefix == "" && (nested || isTable(k)) {
				continue
			}
			if sec.Prefix != "" && top != sec.Prefix {
				continue
			}
			if k.Key == sec.Prefix || strings.HasSuffix(k.Key, ".*") {
				continue // the table itself: its intro says it
			}
			name := k.Key
			if sec.Prefix != "" {
				name = strings.TrimPrefix(k.Key, sec.Prefix+".")
			}
			p(".TP")
			def := "required"
			if k.Default != "" {
				def = "default " + k.Default
			} else if isTable(k) {
				def = "optional"
			}
			p(`\fB%s\fP (%s, %s)`, Roff(name), Roff(k.Type), Roff(def))
			p("%s", RoffText(k.Desc))
		}
	}
	p(".SH FILES")
	p(".TP")
	p(".I /etc/hora/hora.toml")
	p("The configuration horad.service starts horad with.")
	p(".TP")
	p(".I /usr/share/doc/hora\\-server/examples/hora.toml.example")
	p("Every key with a comment.")
	p(".SH EXAMPLES")
	p("Sixteen nodes over SSH in one partition:")
	p(".PP")
	p(".EX")
	for _, l := range []string{
		`executor = "ssh"`,
		``,
		`[ssh]`,
		`known_hosts   = "/etc/hora/known_hosts"`,
		`identity_file = "/etc/hora/id_ed25519"`,
		``,
		`[[node]]`,
		`name = "n[01-16]"`,
		`cpus = 32`,
		``,
		`[[partition]]`,
		`name     = "batch"`,
		`nodes    = "n[01-16]"`,
		`default  = true`,
		`max_time = "2-00:00:00"`,
	} {
		p("%s", Roff(l))
	}
	p(".EE")
	p(".PP")
	p("Check a file before reloading:")
	p(".PP")
	p(".EX")
	p(`horad \-\-check\-config \-\-config /etc/hora/hora.toml && systemctl reload horad`)
	p(".EE")
	p(".SH SEE ALSO")
	p(".BR horad (8),")
	p(".BR sbatch (1),")
	p(".BR sinfo (1),")
	p(".BR scontrol (1)")
	return b.Bytes()
}

func isTable(k KeyDoc) bool { return strings.Contains(k.Type, "table") }
