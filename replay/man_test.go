package replay

import (
	"bytes"
	"context"
	"flag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"hora/sbatch/gendoc"
)

var updateMan = flag.Bool("update", false, "rewrite man/hora-replay.1 and man/hora-compare.1 from the flags")

// manDate is fixed, not the clock, so that the pages regenerate to the
// same bytes; bump it when they change in substance.
const manDate = "November 27, 2026"

// manPage renders a verb's page from its cli.App: the flags it parses are
// the options the page lists, so a new flag cannot go undocumented.
func manPage(a *cli.App, name string, examples []string) []byte {
	var opts []gendoc.Item
	for _, f := range a.Flags {
		n := f.Names()[0]
		if n == "help" {
			continue
		}
		df, ok := f.(cli.DocGenerationFlag)
		if !ok {
			continue
		}
		arg, usage := backquoted(df.GetUsage())
		tag := "*--" + n + "*"
		if df.TakesValue() {
			if arg == "" {
				arg = "value"
			}
			tag += " _" + arg + "_"
			if v := df.GetValue(); v != "" && v != `""` && v != "[]" {
				usage += " (default " + v + ")"
			}
		}
		if !strings.HasSuffix(usage, ".") {
			usage += "."
		}
		opts = append(opts, gendoc.Item{Tag: tag, Text: strings.ToUpper(usage[:1]) + usage[1:]})
	}
	var syn []string
	for _, l := range strings.Split(a.UsageText, "\n") {
		syn = append(syn, strings.TrimSpace(l))
	}
	desc := strings.Join(strings.Fields(a.Description), " ")
	return gendoc.Roff(gendoc.Page{Name: name, Section: "1", Date: manDate, Source: "hora", Manual: "hora manual",
		Summary: a.Usage, Synopsis: syn, Sections: []gendoc.Section{
			{Title: "DESCRIPTION", Paras: []string{desc,
				"It runs in *hora-sim*, a program of its own that *hora*(1) hands the command to, so that the client commands do not load the simulator. The scheduler is the same Engine that *horad*(8) runs; only the clock and the nodes are simulated."}},
			{Title: "OPTIONS", Items: opts},
			{Title: "EXIT STATUS", Items: []gendoc.Item{
				{Tag: "*0*", Text: "Success."},
				{Tag: "*1*", Text: "The workload or the configuration could not be read or simulated; the message names the input (file:line for a log)."},
				{Tag: "*2*", Text: "A bad option or combination of options."}}},
			{Title: "EXAMPLES", Paras: examples},
			{Title: "SEE ALSO", Paras: []string{"*hora*(1), *hora-replay*(1), *hora-compare*(1), *horad*(8), *hora.toml*(5)"}},
		}})
}

// TestManPages: man/hora-replay.1 and man/hora-compare.1 are what the
// flags generate (`make man` rewrites them), list every flag, and pass
// mandoc -Tlint -Werror.
func TestManPages(t *testing.T) {
	var status int
	for _, pg := range []struct {
		name     string
		app      *cli.App
		examples []string
	}{
		{"hora-replay", replayApp(context.Background(), io.Discard, io.Discard, &status), []string{
			"$ hora replay --policy easy data/swf/SDSC-SP2.swf.gz\n$ hora replay --synthetic be-rt-mix-2001 --mix-mode tdm --ratio 2:1 --json\n$ hora replay --config /etc/hora/hora.toml --per-cpu --cores-per-node 64 log.swf"}},
		{"hora-compare", compareApp(context.Background(), io.Discard, io.Discard, &status), []string{
			"$ hora compare --policies easy,fcfs log.swf\n$ hora compare --synthetic castillo-ch3 --strategy min-lip,lact --loads 0.2,0.6,1.0"}},
	} {
		got := manPage(pg.app, pg.name, pg.examples)
		for _, f := range pg.app.Flags {
			n := f.Names()[0]
			if n != "help" && !bytes.Contains(got, []byte(`\fB\-\-`+strings.ReplaceAll(n, "-", `\-`)+`\fR`)) {
				t.Errorf("%s.1 does not describe --%s", pg.name, n)
			}
		}
		path := filepath.Join("..", "man", pg.name+".1")
		if *updateMan {
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		old, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(old, got) {
			t.Errorf("%s is not up to date: run make man", path)
		}
		if out, err := exec.Command("mandoc", "-Tlint", "-Werror", path).CombinedOutput(); err != nil || len(out) > 0 {
			t.Errorf("mandoc -Tlint -Werror %s: %v\n%s", path, err, out)
		}
	}
}

// backquoted reads urfave/cli's convention: a `word` in a flag's usage is
// the name of its argument (and loses its quotes in the text).
func backquoted(usage string) (arg, text string) {
	i := strings.IndexByte(usage, '`')
	if i < 0 {
		return "", usage
	}
	j := strings.IndexByte(usage[i+1:], '`')
	if j < 0 {
		return "", usage
	}
	arg = usage[i+1 : i+1+j]
	return arg, usage[:i] + arg + usage[i+2+j:]
}
