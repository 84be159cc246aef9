package sbatch

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
)

// Directive is one #SBATCH (or translated #PBS) line: its 1-based line
// number in the script and the argv words on it.
type Directive struct {
	Line  int
	Words []string
}

// slurmPrefixWarning is what sbatch prints for the old #SLURM prefix; Slurm
// logs it with error() although the script is still accepted.
const slurmPrefixWarning = "error: Change from #SLURM to #SBATCH in your script and verify the options are valid in sbatch"

// scanLines calls fn for every line of the directive header of script: the
// lines before the first command (COMPAT.md §1.2). Blank lines and lines
// whose first non-blank character is '#' belong to the header.
func scanLines(script []byte, fn func(n int, line string) error) error {
	n := 0
	for len(script) > 0 {
		n++
		var line []byte
		if i := bytes.IndexByte(script, '\n'); i >= 0 {
			line, script = script[:i], script[i+1:]
		} else {
			line, script = script, nil
		}
		t := bytes.TrimLeft(line, " \t\r\v\f")
		if len(t) > 0 && t[0] != '#' {
			return nil
		}
		if err := fn(n, string(line)); err != nil {
			return err
		}
	}
	return nil
}

// directiveBody returns the text after a column-0 magic word, or ok=false
// when the line does not carry it. The word must end there (followed by a
// blank or the end of the line) so that "#SBATCHED" stays a comment.
func directiveBody(line, magic string) (string, bool) {
	if !strings.HasPrefix(line, magic) {
		return "", false
	}
	rest := line[len(magic):]
	if rest != "" && !strings.ContainsRune(" \t\r\v\f", rune(rest[0])) {
		return "", false
	}
	return rest, true
}

// ScanDirectives reads the #SBATCH (and #SLURM) directives of a batch
// script as sbatch does (COMPAT.md §1.2): column 0 only, up to the first
// command line, words split on blanks with '...' and "..." quoting and '\'
// escapes, an unquoted '#' starting a comment. Shell syntax is not
// expanded. An unmatched quote is an *Error with Slurm's fatal text.
func ScanDirectives(script []byte, file string) ([]Directive, []string, error) {
	var out []Directive
	var warnings []string
	err := scanLines(script, func(n int, line string) error {
		body, ok := directiveBody(line, "#SBATCH")
		if !ok {
			if body, ok = directiveBody(line, "#SLURM"); !ok {
				return nil
			}
			if len(warnings) == 0 {
				warnings = append(warnings, slurmPrefixWarning)
			}
		}
		words, err := splitDirective(body, file, n, line)
		if err != nil {
			return err
		}
		if len(words) > 0 {
			out = append(out, Directive{Line: n, Words: words})
		}
		return nil
	})
	return out, warnings, err
}

// splitDirective splits the text after the magic word into words. A
// backslash escapes the next character everywhere, also inside quotes, as
// in Slurm's reader; an unescaped '#' outside quotes ends the line.
func splitDirective(s, file string, n int, line string) ([]string, error) {
	s = strings.TrimRight(s, "\r")
	var words []string
	var cur strings.Builder
	inWord, escaped := false, false
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case escaped:
			cur.WriteByte(c)
			escaped = false
		case c == '\\':
			escaped, inWord = true, true
		case quote != 0:
			if c == quote {
				quote = 0
			} else {
				cur.WriteByte(c)
			}
		case c == '"' || c == '\'':
			quote, inWord = c, true
		case c == '#':
			i = len(s)
		case c == ':' && !inWord:
			// Slurm reserves a word-initial ':' (the hetjob separator
			// of the command line) and stops.
			return nil, &Error{
				Msg:  fmt.Sprintf("fatal: %s: line %d: Unexpected `:` in [%s]", file, n, strings.TrimRight(line, "\r")),
				Exit: 1,
			}
		case c == ' ' || c == '\t' || c == '\v' || c == '\f' || c == '\r':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, &Error{
			Msg:  fmt.Sprintf("fatal: %s: line %d: Unmatched `%c` in [%s]", file, n, quote, strings.TrimRight(line, "\r")),
			Exit: 1,
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

// pbsOpts are qsub's options as they may appear on #PBS lines. Every
// letter qsub knows is listed so that an unsupported but valid option is
// ignored (as Slurm's translator does) rather than reported as a typo.
// Built on first use: only a script with #PBS lines needs it.
var pbsOpts = sync.OnceValue(func() []Opt {
	var o []Opt
	for _, c := range "aAcCeJjklmMNoPpqrSt" + "uvWdDwGfLRTz" {
		o = append(o, Opt{Short: c, Arg: RequiredArg, Key: string(c)})
	}
	for _, c := range "hIVXnF" {
		o = append(o, Opt{Short: c, Arg: NoArg, Key: string(c)})
	}
	// -z (no job id output) takes no value in qsub.
	for i := range o {
		if o[i].Short == 'z' {
			o[i].Arg = NoArg
		}
	}
	return o
})

// pbsLines calls fn for every #PBS line. Unlike #SBATCH, Slurm does not
// stop at the first command: it reads on until it has passed more than 100
// lines that do not start with '#' (opt.c _opt_wrpr_batch_script).
func pbsLines(script []byte, fn func(n int, body, line string) error) error {
	n, others := 0, 0
	for len(script) > 0 && others <= 100 {
		n++
		var line []byte
		if i := bytes.IndexByte(script, '\n'); i >= 0 {
			line, script = script[:i], script[i+1:]
		} else {
			line, script = script, nil
		}
		body, ok := directiveBody(string(line), "#PBS")
		if !ok {
			if len(line) == 0 || line[0] != '#' {
				others++
			}
			continue
		}
		if err := fn(n, body, string(line)); err != nil {
			return err
		}
	}
	return nil
}

// TranslatePBS reads the #PBS directives of script (column 0, read past
// commands as Slurm does, see pbsLines) and returns them as sbatch words,
// one Directive per line, for
// the common subset: -N -o -e -j -q -A -a -h -r -m -M -W depend= -J/-t and
// -l walltime/nodes/select/ncpus/mem. Other qsub options are ignored, as
// Slurm's translator ignores what it cannot map. BuildSpec applies these
// after the #SBATCH directives, as sbatch does.
func TranslatePBS(script []byte, file string) ([]Directive, error) {
	var out []Directive
	joined := false // -j oe/eo anywhere: one file for both streams
	err := pbsLines(script, func(n int, body, line string) error {
		words, err := splitDirective(body, file, n, line)
		if err != nil {
			return err
		}
		bad := func(format string, a ...any) error {
			return &Error{Msg: fmt.Sprintf("error: %s: line %d: ", file, n) + fmt.Sprintf(format, a...), Exit: 255}
		}
		p, err := Getopt(pbsOpts(), words, false)
		if err != nil {
			return bad("invalid #PBS directive: %s", err)
		}
		if len(p.Args) > 0 {
			return bad("invalid #PBS directive: unexpected %q", p.Args[0])
		}
		d := Directive{Line: n}
		add := func(w ...string) { d.Words = append(d.Words, w...) }
		for _, v := range p.Values {
			switch v.Key {
			case "N":
				add("--job-name=" + v.Val)
			case "o":
				add("--output=" + pbsPath(v.Val))
			case "e":
				add("--error=" + pbsPath(v.Val))
			case "j":
				switch v.Val {
				case "oe", "eo":
					// Slurm's default is one file for both streams; the
					// -e paths are dropped below, wherever they are.
					joined = true
				case "n":
				default:
					return bad("invalid -j value %q", v.Val)
				}
			case "q":
				add("--partition=" + strings.SplitN(v.Val, "@", 2)[0])
			case "A":
				add("--account=" + v.Val)
			case "a":
				t, err := pbsDateTime(v.Val)
				if err != nil {
					return bad("invalid -a value %q", v.Val)
				}
				add("--begin=" + t)
			case "h":
				add("--hold")
			case "r":
				switch v.Val {
				case "y":
					add("--requeue")
				case "n":
					add("--no-requeue")
				default:
					return bad("invalid -r value %q", v.Val)
				}
			case "m":
				add("--mail-type=" + pbsMailType(v.Val))
			case "M":
				add("--mail-user=" + v.Val)
			case "J", "t":
				add("--array=" + v.Val)
			case "W":
				for _, attr := range strings.Split(v.Val, ",") {
					if dep, ok := strings.CutPrefix(attr, "depend="); ok {
						add("--dependency=" + dep)
					}
				}
			case "l":
				w, err := pbsResources(v.Val)
				if err != nil {
					return bad("invalid -l value %q: %v", v.Val, err)
				}
				add(w...)
			}
		}
		if len(d.Words) > 0 {
			out = append(out, d)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !joined {
		return out, nil
	}
	kept := out[:0]
	for _, d := range out {
		if d.Words = dropPrefix(d.Words, "--error="); len(d.Words) > 0 {
			kept = append(kept, d)
		}
	}
	return kept, nil
}

func dropPrefix(words []string, p string) []string {
	out := words[:0]
	for _, w := range words {
		if !strings.HasPrefix(w, p) {
			out = append(out, w)
		}
	}
	return out
}

// pbsPath drops the "host:" part of a PBS output path; hora writes output
// on the node's shared file system.
func pbsPath(p string) string {
	if i := strings.IndexByte(p, ':'); i > 0 && !strings.Contains(p[:i], "/") {
		return p[i+1:]
	}
	return p
}

func pbsMailType(m string) string {
	var t []string
	for _, c := range m {
		switch c {
		case 'a':
			t = append(t, "FAIL")
		case 'b':
			t = append(t, "BEGIN")
		case 'e':
			t = append(t, "END")
		case 'n':
			return "NONE"
		}
	}
	if len(t) == 0 {
		return "NONE"
	}
	return strings.Join(t, ",")
}

// pbsDateTime converts qsub -a [[[[CC]YY]MM]DD]hhmm[.SS] into a --begin
// value. A day without a month has no Slurm form and is refused.
func pbsDateTime(s string) (string, error) {
	main, sec, hasSec := strings.Cut(s, ".")
	if hasSec && (len(sec) != 2 || !allDigits(sec)) || !allDigits(main) {
		return "", fmt.Errorf("bad time")
	}
	if !hasSec {
		sec = "00"
	}
	n := len(main)
	if n < 4 {
		return "", fmt.Errorf("bad time")
	}
	clock := main[n-4:n-2] + ":" + main[n-2:] + ":" + sec
	switch n {
	case 4:
		return clock, nil
	case 8: // MMDDhhmm
		return main[0:2] + "/" + main[2:4] + "-" + clock, nil
	case 10: // YYMMDDhhmm
		return main[2:4] + "/" + main[4:6] + "/" + main[0:2] + "-" + clock, nil
	case 12: // CCYYMMDDhhmm
		return main[0:4] + "-" + main[4:6] + "-" + main[6:8] + "T" + clock, nil
	}
	return "", fmt.Errorf("bad time")
}

// pbsResources translates one -l list.
func pbsResources(list string) ([]string, error) {
	var out []string
	for _, res := range strings.Split(list, ",") {
		name, val, ok := strings.Cut(res, "=")
		if !ok {
			return nil, fmt.Errorf("%q is not name=value", res)
		}
		switch name {
		case "walltime":
			secs, err := ParsePBSDuration(val)
			if err != nil {
				return nil, err
			}
			out = append(out, "--time="+FormatLongDuration(secs))
		case "mem":
			mb, err := pbsSizeMB(val)
			if err != nil {
				return nil, err
			}
			out = append(out, fmt.Sprintf("--mem=%d", mb))
		case "ncpus":
			if !allDigits(val) || val == "" {
				return nil, fmt.Errorf("bad ncpus %q", val)
			}
			out = append(out, "--cpus-per-task="+val)
		case "nodes":
			// Torque: N[:ppn=M]; host names and '+' lists are not mapped.
			parts := strings.Split(val, ":")
			if !allDigits(parts[0]) || parts[0] == "" {
				return nil, fmt.Errorf("unsupported nodes spec %q", val)
			}
			out = append(out, "--nodes="+parts[0])
			for _, p := range parts[1:] {
				if ppn, ok := strings.CutPrefix(p, "ppn="); ok && ppn != "" && allDigits(ppn) {
					out = append(out, "--ntasks-per-node="+ppn)
				} else {
					return nil, fmt.Errorf("unsupported nodes spec %q", val)
				}
			}
		case "select":
			// PBS Pro: N[:ncpus=C][:mem=S][:mpiprocs=P]; one chunk per node.
			parts := strings.Split(val, ":")
			if !allDigits(parts[0]) || parts[0] == "" || strings.Contains(val, "+") {
				return nil, fmt.Errorf("unsupported select spec %q", val)
			}
			out = append(out, "--nodes="+parts[0])
			for _, p := range parts[1:] {
				k, v, _ := strings.Cut(p, "=")
				switch k {
				case "ncpus":
					if !allDigits(v) || v == "" {
						return nil, fmt.Errorf("bad ncpus %q", v)
					}
					out = append(out, "--cpus-per-task="+v)
				case "mpiprocs":
					if !allDigits(v) || v == "" {
						return nil, fmt.Errorf("bad mpiprocs %q", v)
					}
					out = append(out, "--ntasks-per-node="+v)
				case "mem":
					mb, err := pbsSizeMB(v)
					if err != nil {
						return nil, err
					}
					out = append(out, fmt.Sprintf("--mem=%d", mb))
				}
			}
		}
		// Other resources (place=, cput=, host=...) are ignored.
	}
	return out, nil
}

// pbsSizeMB reads a PBS size (integer, optional k/m/g/t/p multiplier of
// 1024, optional b (bytes) or w (words); bare number = bytes) and rounds up
// to MiB.
func pbsSizeMB(s string) (int64, error) {
	l := strings.ToLower(s)
	// 'w' counts 8-byte words (OpenPBS attr_fn_size.c).
	words := strings.HasSuffix(l, "w")
	if words {
		l = l[:len(l)-1]
	} else {
		l = strings.TrimSuffix(l, "b")
	}
	shift := 0
	if l != "" {
		switch l[len(l)-1] {
		case 'k':
			shift = 10
		case 'm':
			shift = 20
		case 'g':
			shift = 30
		case 't':
			shift = 40
		case 'p':
			shift = 50
		}
		if shift > 0 {
			l = l[:len(l)-1]
		}
	}
	if l == "" || !allDigits(l) || len(l) > 15 {
		return 0, fmt.Errorf("bad size %q", s)
	}
	var n int64
	for i := 0; i < len(l); i++ {
		n = n*10 + int64(l[i]-'0')
	}
	// Work in KiB (≥ 1 byte rounds up to 1 KiB) to keep exact results
	// without overflow for every accepted size.
	var kib int64
	if shift == 0 {
		kib = (n + 1023) >> 10
	} else {
		if n > (1<<62)>>(shift-10) {
			return 0, fmt.Errorf("size %q too large", s)
		}
		kib = n << (shift - 10)
	}
	if words {
		kib *= 8
	}
	return (kib + 1023) >> 10, nil
}
