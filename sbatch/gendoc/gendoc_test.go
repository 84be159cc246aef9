package gendoc

import (
	"strings"
	"testing"
)

func TestInline(t *testing.T) {
	for in, want := range map[string]string{
		"plain text":              "plain text",
		"*bold* and _it_":         `\fBbold\fR and \fIit\fR`,
		"SLURM_JOB_ID stays":      `SLURM_JOB_ID stays`,
		"only the SLURM_* ones":   `only the SLURM_* ones`,
		"*--time*=_min[-max]_":    `\fB\-\-time\fR=\fImin[\-max]\fR`,
		".starts with a dot":      `\&.starts with a dot`,
		"'quote first":            `\&'quote first`,
		`back\slash`:              `back\eslash`,
		"a.b. c.d":                "a.b. c.d",
		"*unclosed":               "*unclosed",
		"*SBATCH_WAIT* or *x*.":   `\fBSBATCH_WAIT\fR or \fBx\fR.`,
		"100% of *%j* and 2(x3),": `100% of \fB%j\fR and 2(x3),`,
	} {
		if got := inline(in); got != want {
			t.Errorf("inline(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRoffShape(t *testing.T) {
	out := string(Roff(Page{Name: "x", Section: "1", Date: "January 1, 2026", Source: "hora", Manual: "m",
		Summary: "does x", Synopsis: []string{"*x* [_opts_]"},
		Sections: []Section{{Title: "OPTIONS", Items: []Item{{Tag: Option('a', "all", "", 0), Text: "One.\n\nTwo."}}},
			{Title: "EXAMPLES", Paras: []string{"Run it:", "$ x -a\n.dot"}}}}))
	want := `.TH X 1 "January 1, 2026" "hora" "m"
.SH NAME
x \- does x
.SH SYNOPSIS
\fBx\fR [\fIopts\fR]
.SH OPTIONS
.TP
\fB\-a\fR, \fB\-\-all\fR
One.
.IP
Two.
.SH EXAMPLES
Run it:
.PP
.nf
.RS
$ x \-a
\&.dot
.RE
.fi
`
	if out != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
	if !strings.HasSuffix(Option('t', "time", "time", 1), "=_time_") || Option(0, "nice", "n", 2) != "*--nice*[=_n_]" {
		t.Error("Option tags")
	}
}
