package ssh

import (
	"os/exec"
	"strings"
	"testing"
)

var nasty = []string{
	"",
	"plain",
	"two words",
	"it's",
	`"double"`,
	"$(touch /tmp/hora-pwned)",
	"`touch /tmp/hora-pwned`",
	"a; touch /tmp/hora-pwned",
	"line1\nline2\n",
	"tab\there",
	`back\slash\`,
	"'",
	"''",
	"-n",
	"~root",
	"*",
	"$HOME ${IFS} !event",
	"a|b&c>d<e",
	"\x01\x7f\xff\xfe",
	"é ☃",
}

// TestQuoteRoundTrip passes every string through a real /bin/sh and
// checks that it arrives unchanged, as one argument.
func TestQuoteRoundTrip(t *testing.T) {
	for _, s := range nasty {
		cmd := `printf '%s\000' ` + Quote(s) + `; printf 'end'`
		out, err := exec.Command("/bin/sh", "-c", cmd).Output()
		if err != nil {
			t.Fatalf("sh -c %q: %v", cmd, err)
		}
		want := s + "\x00end"
		if string(out) != want {
			t.Errorf("Quote(%q) = %s: the shell gave %q, want %q", s, Quote(s), out, want)
		}
	}
}

func TestQuoteCommandKeepsWords(t *testing.T) {
	line := `for a; do printf '[%s]' "$a"; done` // the script
	// The quoted command line goes through one more shell, as over SSH.
	cmd := exec.Command("/bin/sh", "-c", "eval "+Quote(QuoteCommand("/bin/sh", "-c", line, "x", "a b", "it's", "$(id)", ";")))
	got, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	if want := "[a b][it's][$(id)][;]"; string(got) != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestQuoteLeavesSafeWordsAlone(t *testing.T) {
	for _, s := range []string{"abc", "/var/lib/hora-node/n1", "42.batch", "KEY=v"} {
		q := Quote(s)
		if strings.HasPrefix(s, "KEY=") {
			if q != "'KEY=v'" {
				t.Errorf("Quote(%q) = %s; '=' must be quoted", s, q)
			}
			continue
		}
		if q != s {
			t.Errorf("Quote(%q) = %s, want it unquoted", s, q)
		}
	}
}

// TestEncodeLine checks that printf %b on a real shell decodes what
// encodeLine produced, byte for byte, and that it is one line.
func TestEncodeLine(t *testing.T) {
	var all []byte
	for c := 1; c < 256; c++ {
		all = append(all, byte(c))
	}
	for _, s := range append(nasty, string(all), `\c stops %b output`, `\0101`) {
		enc := encodeLine([]byte(s))
		if strings.ContainsAny(enc, "\n\r") {
			t.Fatalf("encodeLine(%q) has a line break", s)
		}
		cmd := exec.Command("/bin/sh", "-c", `IFS= read -r l; printf '%b' "$l"`)
		cmd.Stdin = strings.NewReader(enc + "\n")
		out, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		if string(out) != s {
			t.Errorf("encodeLine(%q) decoded as %q", s, out)
		}
	}
}
