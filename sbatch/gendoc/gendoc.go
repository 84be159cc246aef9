// Package gendoc writes man pages (man(7) roff) and bash, zsh and fish
// completions from plain descriptions of commands. It is pure: the caller
// (`hora gendoc`, see cmd/hora/gendoc.go) builds the descriptions from the
// option registry of package sbatch and the option tables of the other
// commands, and writes the bytes where they belong. Output is
// deterministic: same input, same bytes (the man/ golden test relies on it).
package gendoc

import (
	"fmt"
	"strings"
)

// Page is one man page.
type Page struct {
	Name    string // "sbatch"
	Section string // "1"
	Date    string // "November 27, 2026"; fixed by the caller, never the clock
	Source  string // "hora"
	Manual  string // "hora manual"
	Summary string // what follows "name \-" in NAME
	// Synopsis lines, in the small markup of Text.
	Synopsis []string
	Sections []Section
}

// Section is a .SH section: paragraphs, then tagged items.
type Section struct {
	Title string
	Paras []string // in the markup of Text
	Items []Item
	Tail  []string // paragraphs after the items
}

// Item is a tagged paragraph (.TP): an option, a variable, an exit code.
type Item struct {
	Tag  string // in the markup of Text
	Text string // in the markup of Text; "\n\n" separates paragraphs
	// Pre holds literal lines shown as an indented example after Text.
	Pre []string
}

// Text markup: plain text, where *word* is bold and _word_ is italic when
// the marker stands at a word boundary (so snake_case survives), and
// nothing else is special. Roff's own characters are escaped.
func Text(s string) string { return s }

// Option formats an option tag: "-A, --account=name" with the names bold
// and the argument italic; kind is 0 no argument, 1 required, 2 optional.
func Option(short rune, long, arg string, kind int) string {
	var b strings.Builder
	if short != 0 {
		fmt.Fprintf(&b, "*-%c*", short)
		if long != "" {
			b.WriteString(", ")
		}
	}
	if long != "" {
		b.WriteString("*--" + long + "*")
	}
	switch kind {
	case 1:
		b.WriteString("=_" + arg + "_")
	case 2:
		b.WriteString("[=_" + arg + "_]")
	}
	return b.String()
}

// escape makes plain text safe in roff: backslashes, hyphens (so that
// options and command lines copy and paste as ASCII) and a leading dot or
// apostrophe, which would start a request.
func escape(s string) string {
	s = escChars(s)
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		s = `\&` + s
	}
	return s
}

func escChars(s string) string {
	s = strings.ReplaceAll(s, `\`, `\e`)
	return strings.ReplaceAll(s, "-", `\-`)
}

// inline turns the markup of Text into roff font escapes. A marker opens
// after a non-alphanumeric character (or at the start) when a non-blank
// follows and the same marker appears again; it closes before a
// non-alphanumeric character (or at the end).
func inline(s string) string {
	var b strings.Builder
	font := byte(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '*' || c == '_' {
			afterWord := i > 0 && alnum(s[i-1])
			beforeWord := i+1 < len(s) && alnum(s[i+1])
			switch {
			case font == 0 && !afterWord && i+1 < len(s) && s[i+1] != ' ' && s[i+1] != c &&
				strings.IndexByte(s[i+1:], c) > 0:
				font = c
				if c == '*' {
					b.WriteString(`\fB`)
				} else {
					b.WriteString(`\fI`)
				}
				continue
			case font == c && !beforeWord:
				font = 0
				b.WriteString(`\fR`)
				continue
			}
		}
		b.WriteString(escChars(string(c)))
	}
	if font != 0 {
		b.WriteString(`\fR`)
	}
	out := b.String()
	if strings.HasPrefix(out, ".") || strings.HasPrefix(out, "'") {
		out = `\&` + out
	}
	return out
}

func alnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// Roff renders the page.
func Roff(p Page) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, ".TH %s %s \"%s\" \"%s\" \"%s\"\n", strings.ToUpper(p.Name), p.Section, p.Date, p.Source, p.Manual)
	b.WriteString(".SH NAME\n")
	fmt.Fprintf(&b, "%s \\- %s\n", escape(p.Name), escape(p.Summary))
	if len(p.Synopsis) > 0 {
		b.WriteString(".SH SYNOPSIS\n")
		for i, l := range p.Synopsis {
			if i > 0 {
				b.WriteString(".br\n")
			}
			b.WriteString(inline(l) + "\n")
		}
	}
	for _, s := range p.Sections {
		fmt.Fprintf(&b, ".SH %s\n", s.Title)
		paras(&b, s.Paras)
		for _, it := range s.Items {
			b.WriteString(".TP\n")
			b.WriteString(inline(it.Tag) + "\n")
			for i, para := range strings.Split(it.Text, "\n\n") {
				if i > 0 {
					b.WriteString(".IP\n")
				}
				b.WriteString(inline(para) + "\n")
			}
			if len(it.Pre) > 0 {
				b.WriteString(".IP\n.nf\n")
				for _, l := range it.Pre {
					b.WriteString(escape(l) + "\n")
				}
				b.WriteString(".fi\n")
			}
		}
		if len(s.Items) > 0 && len(s.Tail) > 0 {
			b.WriteString(".PP\n")
		}
		paras(&b, s.Tail)
	}
	return []byte(b.String())
}

// paras writes paragraphs; one starting with "$ " is a literal example
// (its lines split on "\n").
func paras(b *strings.Builder, ps []string) {
	for i, p := range ps {
		if i > 0 {
			b.WriteString(".PP\n")
		}
		if strings.HasPrefix(p, "$ ") {
			b.WriteString(".nf\n.RS\n")
			for _, l := range strings.Split(p, "\n") {
				b.WriteString(escape(l) + "\n")
			}
			b.WriteString(".RE\n.fi\n")
			continue
		}
		b.WriteString(inline(p) + "\n")
	}
}

// Completion describes one command for the shell completions.
type Completion struct {
	Command string
	Options []CompOption
}

// CompOption is one option as the shells complete it.
type CompOption struct {
	Short  rune
	Long   string
	Arg    int      // 0 none, 1 required, 2 optional
	Help   string   // one line
	Values []string // fixed words for the argument; none = files
}

// Bash writes one bash completion script for every command: a function
// per command that offers the long options after "-" and the fixed
// values after "--opt=" (or after a required-argument option), files
// otherwise.
func Bash(cmds []Completion) []byte {
	var b strings.Builder
	b.WriteString("# bash completion for hora's commands. Generated by `hora gendoc`; do not edit.\n")
	b.WriteString(`_hora_complete() {
	local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} opt=
	local opts=$1 vals=$2 argopts=$3
	# "=" is in COMP_WORDBREAKS by default: --opt=val arrives as --opt = val.
	if [[ $cur == = ]]; then
		opt=$prev cur=
	elif [[ $prev == = && $COMP_CWORD -ge 2 ]]; then
		opt=${COMP_WORDS[COMP_CWORD-2]}
	elif [[ $cur == --*=* ]]; then
		opt=${cur%%=*} cur=${cur#*=}
	elif [[ " $argopts " == *" $prev "* ]]; then
		opt=$prev
	fi
	if [[ -n $opt ]]; then
		local v
		v=$(printf '%s\n' "$vals" | sed -n "s/^${opt} //p")
		if [[ -n $v ]]; then
			COMPREPLY=($(compgen -W "$v" -- "$cur"))
		else
			COMPREPLY=($(compgen -f -- "$cur"))
		fi
		return
	fi
	if [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W "$opts" -- "$cur"))
		return
	fi
	COMPREPLY=($(compgen -f -- "$cur"))
}
`)
	for _, c := range cmds {
		fn := "_hora_" + strings.ReplaceAll(c.Command, "-", "_")
		var opts, vals, argopts []string
		for _, o := range c.Options {
			if o.Long != "" {
				opts = append(opts, "--"+o.Long)
				if o.Arg == 1 {
					argopts = append(argopts, "--"+o.Long)
				}
				if len(o.Values) > 0 {
					vals = append(vals, "--"+o.Long+" "+strings.Join(o.Values, " "))
				}
			}
			if o.Short != 0 {
				opts = append(opts, "-"+string(o.Short))
				if o.Arg == 1 {
					argopts = append(argopts, "-"+string(o.Short))
					if len(o.Values) > 0 {
						vals = append(vals, "-"+string(o.Short)+" "+strings.Join(o.Values, " "))
					}
				}
			}
		}
		fmt.Fprintf(&b, "%s() {\n\t_hora_complete '%s' '%s' '%s'\n}\ncomplete -F %s %s\n",
			fn, strings.Join(opts, " "), strings.Join(vals, "\n"), strings.Join(argopts, " "), fn, c.Command)
	}
	return []byte(b.String())
}

// Zsh writes one zsh completion file (#compdef for every command) built
// on _arguments.
func Zsh(cmds []Completion) []byte {
	var b strings.Builder
	names := make([]string, len(cmds))
	for i, c := range cmds {
		names[i] = c.Command
	}
	fmt.Fprintf(&b, "#compdef %s\n# zsh completion for hora's commands. Generated by `hora gendoc`; do not edit.\n\n", strings.Join(names, " "))
	b.WriteString("case $service in\n")
	for _, c := range cmds {
		fmt.Fprintf(&b, "%s)\n\t_arguments -s -S \\\n", c.Command)
		for _, o := range c.Options {
			help := zshQuote(o.Help)
			action := ""
			switch {
			case o.Arg == 0:
			case len(o.Values) > 0:
				action = ":" + zshQuote(o.Long) + ":(" + strings.Join(o.Values, " ") + ")"
			default:
				action = ":" + zshQuote(o.Long) + ":_files"
			}
			eq := ""
			switch o.Arg {
			case 1:
				eq = "="
			case 2:
				eq = "=-"
			}
			if o.Long != "" {
				fmt.Fprintf(&b, "\t\t'--%s%s[%s]%s' \\\n", o.Long, eq, help, action)
			}
			if o.Short != 0 {
				sa := action
				if o.Arg == 2 {
					sa = ""
				}
				fmt.Fprintf(&b, "\t\t'-%c[%s]%s' \\\n", o.Short, help, sa)
			}
		}
		b.WriteString("\t\t'*:file:_files'\n\t;;\n")
	}
	b.WriteString("esac\n")
	return []byte(b.String())
}

func zshQuote(s string) string {
	r := strings.NewReplacer("'", `'\''`, "[", `\[`, "]", `\]`, ":", `\:`)
	return r.Replace(s)
}

// Fish writes one fish file of `complete` lines for every command.
func Fish(cmds []Completion) []byte {
	var b strings.Builder
	b.WriteString("# fish completion for hora's commands. Generated by `hora gendoc`; do not edit.\n")
	for _, c := range cmds {
		for _, o := range c.Options {
			fmt.Fprintf(&b, "complete -c %s", c.Command)
			if o.Short != 0 {
				fmt.Fprintf(&b, " -s %c", o.Short)
			}
			if o.Long != "" {
				fmt.Fprintf(&b, " -l %s", o.Long)
			}
			if o.Arg == 1 {
				b.WriteString(" -r")
			}
			if len(o.Values) > 0 {
				fmt.Fprintf(&b, " -x -a '%s'", strings.Join(o.Values, " "))
			}
			if o.Help != "" {
				fmt.Fprintf(&b, " -d '%s'", strings.ReplaceAll(o.Help, "'", `\'`))
			}
			b.WriteString("\n")
		}
	}
	return []byte(b.String())
}
