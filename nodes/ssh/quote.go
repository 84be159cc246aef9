package ssh

import (
	"fmt"
	"strings"
)

// Quote returns s as one word of a POSIX shell command line: inside single
// quotes nothing is special, and a single quote is written as '\” (close,
// escaped quote, reopen). Every argument horad puts into a remote command
// goes through Quote; NUL bytes cannot be passed to a remote program at all,
// so callers reject them first (see checkNoNUL).
func Quote(s string) string {
	if s == "" {
		return "''"
	}
	if isSafeWord(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// isSafeWord reports whether s needs no quoting in any POSIX shell.
func isSafeWord(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("-_./,:+@%", c) >= 0:
		default:
			return false
		}
	}
	// A leading '-' is harmless to the shell; a leading '~' or '=' is
	// excluded above anyway.
	return true
}

// QuoteCommand quotes every word of argv and joins them with spaces.
func QuoteCommand(argv ...string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = Quote(a)
	}
	return strings.Join(q, " ")
}

// encodeLine encodes data as one line for `printf '%b'` on the node: every
// byte but printable ASCII other than the backslash becomes \0ooo. The
// result has no newline, so the node can read it with `IFS= read -r`
// before the raw script that follows it on the same stdin.
func encodeLine(data []byte) string {
	var b strings.Builder
	b.Grow(len(data) + len(data)/8)
	for _, c := range data {
		if c >= 0x20 && c < 0x7f && c != '\\' {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, `\0%03o`, c)
	}
	return b.String()
}

// checkNoNUL refuses strings that no remote command can carry.
func checkNoNUL(what, s string) error {
	if strings.IndexByte(s, 0) >= 0 {
		return fmt.Errorf("%s contains a NUL byte", what)
	}
	return nil
}
