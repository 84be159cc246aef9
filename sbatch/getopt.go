package sbatch

import (
	"fmt"
	"strings"
)

// ArgKind says whether an option takes an argument, as in getopt_long(3).
type ArgKind int

const (
	NoArg       ArgKind = iota // --hold
	RequiredArg                // --time=10, --time 10, -t10, -t 10
	OptionalArg                // --jobs[=list], -j[list]: only attached values
)

// Opt declares one option of a command. Key is the canonical name the
// caller switches on (usually the long name).
type Opt struct {
	Short rune
	Long  string
	Arg   ArgKind
	Key   string
}

// Value is one option occurrence, in command-line order.
type Value struct {
	Key  string // Opt.Key
	Name string // as the user spelled it: "-t" or "--time"
	Val  string
	Set  bool // an OptionalArg option given without a value has Set=false
}

// Parsed is the result of Getopt.
type Parsed struct {
	Values []Value
	Args   []string // positional arguments
}

// Last returns the last value given for key (command line semantics: the
// last occurrence wins) and whether it was given at all.
func (p *Parsed) Last(key string) (Value, bool) {
	for i := len(p.Values) - 1; i >= 0; i-- {
		if p.Values[i].Key == key {
			return p.Values[i], true
		}
	}
	return Value{}, false
}

// All returns every value given for key, in order.
func (p *Parsed) All(key string) []string {
	var out []string
	for _, v := range p.Values {
		if v.Key == key {
			out = append(out, v.Val)
		}
	}
	return out
}

// UsageError is a command-line error phrased as glibc's getopt_long phrases
// it; the caller prefixes the program name ("sbatch: ").
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

// Getopt parses argv (without the program name) like GNU getopt_long: long
// options may be abbreviated to any unambiguous prefix, short options may be
// clustered (-Hv) and take attached values (-N2), "--" ends the options.
// When stopAtArg is true parsing stops at the first positional argument (as
// sbatch does: the rest are the script's arguments); otherwise options and
// arguments may be interleaved (scancel 123 --signal USR2).
func Getopt(opts []Opt, argv []string, stopAtArg bool) (*Parsed, error) {
	p := &Parsed{}
	for i := 0; i < len(argv); i++ {
		a := argv[i]
		switch {
		case a == "--":
			p.Args = append(p.Args, argv[i+1:]...)
			return p, nil
		case strings.HasPrefix(a, "--"):
			name, val, hasVal := strings.Cut(a[2:], "=")
			o, err := findLong(opts, name, a)
			if err != nil {
				return nil, err
			}
			v := Value{Key: o.Key, Name: "--" + o.Long, Val: val, Set: hasVal}
			switch o.Arg {
			case NoArg:
				if hasVal {
					return nil, &UsageError{fmt.Sprintf("option '--%s' doesn't allow an argument", o.Long)}
				}
				v.Set = true
			case RequiredArg:
				if !hasVal {
					if i+1 >= len(argv) {
						return nil, &UsageError{fmt.Sprintf("option '--%s' requires an argument", o.Long)}
					}
					i++
					v.Val, v.Set = argv[i], true
				}
			}
			p.Values = append(p.Values, v)
		case len(a) > 1 && a[0] == '-':
			rs := []rune(a[1:])
			for k := 0; k < len(rs); k++ {
				o := findShort(opts, rs[k])
				if o == nil {
					return nil, &UsageError{fmt.Sprintf("invalid option -- '%c'", rs[k])}
				}
				v := Value{Key: o.Key, Name: "-" + string(rs[k])}
				rest := string(rs[k+1:])
				switch o.Arg {
				case NoArg:
					v.Set = true
					p.Values = append(p.Values, v)
					continue
				case RequiredArg:
					if rest != "" {
						v.Val = rest
					} else if i+1 < len(argv) {
						i++
						v.Val = argv[i]
					} else {
						return nil, &UsageError{fmt.Sprintf("option requires an argument -- '%c'", rs[k])}
					}
					v.Set = true
				case OptionalArg:
					v.Val, v.Set = rest, rest != ""
				}
				p.Values = append(p.Values, v)
				break
			}
		default:
			if stopAtArg {
				p.Args = append(p.Args, argv[i:]...)
				return p, nil
			}
			p.Args = append(p.Args, a)
		}
	}
	return p, nil
}

// findLong finds the option named name or abbreviated by it, as glibc's
// getopt_long does: an exact name wins; else the first prefix match,
// unless a later one is a different option (a different Key or argument
// kind), when the abbreviation is ambiguous and glibc lists the first match
// and every different one, in table order. arg is the argument as written
// ("--ti=5"), which glibc quotes in its messages.
func findLong(opts []Opt, name, arg string) (*Opt, error) {
	var first *Opt
	var ambiguous []string
	if name != "" {
		for i := range opts {
			if opts[i].Long == name {
				return &opts[i], nil
			}
		}
	}
	for i := range opts {
		o := &opts[i]
		if o.Long == "" || !strings.HasPrefix(o.Long, name) {
			continue
		}
		switch {
		case first == nil:
			first = o
		case o.Key != first.Key || o.Arg != first.Arg:
			if ambiguous == nil {
				ambiguous = []string{first.Long}
			}
			ambiguous = append(ambiguous, o.Long)
		}
	}
	if ambiguous != nil {
		// The list follows the table's order, first match included.
		var list strings.Builder
		for i := range opts {
			for _, l := range ambiguous {
				if opts[i].Long == l {
					fmt.Fprintf(&list, " '--%s'", l)
					break
				}
			}
		}
		return nil, &UsageError{fmt.Sprintf("option '%s' is ambiguous; possibilities:%s", arg, list.String())}
	}
	if first == nil {
		return nil, &UsageError{fmt.Sprintf("unrecognized option '%s'", arg)}
	}
	return first, nil
}

func findShort(opts []Opt, r rune) *Opt {
	for i := range opts {
		if opts[i].Short == r {
			return &opts[i]
		}
	}
	return nil
}
