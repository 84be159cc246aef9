package sbatch

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"hora/api"
)

// SyntaxError says what is wrong with a value of one of the grammars of this
// package (durations, times, hostlists, sizes). Callers that must print a
// fixed Slurm text (`Invalid --time specification`) print that instead; the
// detail is for logs and tests.
type SyntaxError struct {
	What   string // grammar: "duration", "time", "hostlist", "size"
	Input  string
	Pos    int // byte offset of the offending character, -1 if none
	Reason string
}

func (e *SyntaxError) Error() string {
	if e.Pos >= 0 {
		return fmt.Sprintf("invalid %s %q at position %d: %s", e.What, e.Input, e.Pos, e.Reason)
	}
	return fmt.Sprintf("invalid %s %q: %s", e.What, e.Input, e.Reason)
}

// maxFieldSeconds bounds every parsed duration so that no sum can overflow
// int64; 10^12 s is ~31700 years, far past anything a scheduler can honour.
const maxFieldSeconds = int64(1e12)

// ParseSlurmDuration parses a --time/--time-min value (COMPAT.md §1.4) and
// returns seconds rounded up to whole minutes, because Slurm keeps limits in
// minutes. 0, -1, INFINITE and UNLIMITED mean no limit (api.NoLimit).
func ParseSlurmDuration(s string) (int64, error) {
	bad := func(pos int, why string) (int64, error) {
		return 0, &SyntaxError{What: "duration", Input: s, Pos: pos, Reason: why}
	}
	switch strings.ToUpper(s) {
	case "-1", "INFINITE", "UNLIMITED":
		return api.NoLimit, nil
	}
	if s == "" {
		return bad(-1, "empty")
	}
	dash, colons := -1, 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
		case c == '-':
			if dash >= 0 {
				return bad(i, "more than one '-'")
			}
			if colons > 0 {
				return bad(i, "'-' after ':'")
			}
			dash = i
		case c == ':':
			colons++
			if colons > 2 {
				return bad(i, "more than two ':'")
			}
		default:
			return bad(i, fmt.Sprintf("unexpected character %q", c))
		}
	}
	// Split into numeric fields; an empty field (":5", "1-", "3::") is
	// rejected rather than read as zero, so typos do not silently shorten
	// a limit.
	var days int64
	rest := s
	off := 0
	if dash >= 0 {
		d, err := durField(s, 0, s[:dash])
		if err != nil {
			return 0, err
		}
		days = d
		rest, off = s[dash+1:], dash+1
	}
	parts := strings.Split(rest, ":")
	nums := make([]int64, len(parts))
	p := off
	for i, f := range parts {
		n, err := durField(s, p, f)
		if err != nil {
			return 0, err
		}
		nums[i] = n
		p += len(f) + 1
	}
	var secs int64
	switch {
	case dash >= 0 && len(nums) == 1: // days-hours
		secs = days*86400 + nums[0]*3600
	case dash >= 0 && len(nums) == 2: // days-hours:minutes
		secs = days*86400 + nums[0]*3600 + nums[1]*60
	case dash >= 0: // days-hours:minutes:seconds
		secs = days*86400 + nums[0]*3600 + nums[1]*60 + nums[2]
	case len(nums) == 1: // minutes
		secs = nums[0] * 60
	case len(nums) == 2: // minutes:seconds — not hours:minutes
		secs = nums[0]*60 + nums[1]
	default: // hours:minutes:seconds
		secs = nums[0]*3600 + nums[1]*60 + nums[2]
	}
	if secs > maxFieldSeconds {
		return bad(-1, "too large")
	}
	if secs == 0 {
		return api.NoLimit, nil
	}
	return (secs + 59) / 60 * 60, nil
}

func durField(s string, pos int, f string) (int64, error) {
	if f == "" {
		return 0, &SyntaxError{What: "duration", Input: s, Pos: pos, Reason: "empty field"}
	}
	n, err := strconv.ParseInt(f, 10, 64)
	if err != nil || n > maxFieldSeconds {
		return 0, &SyntaxError{What: "duration", Input: s, Pos: pos, Reason: "number too large"}
	}
	return n, nil
}

// ParsePBSDuration parses a PBS walltime `[[HH:]MM:]SS[.ms]` (COMPAT.md §6.1):
// a bare number is seconds, unlike Slurm. Fractions of a second are rounded
// half up, as OpenPBS does when it stores whole seconds.
func ParsePBSDuration(s string) (int64, error) {
	bad := func(pos int, why string) (int64, error) {
		return 0, &SyntaxError{What: "duration", Input: s, Pos: pos, Reason: why}
	}
	if s == "" {
		return bad(-1, "empty")
	}
	main, frac, hasFrac := strings.Cut(s, ".")
	parts := strings.Split(main, ":")
	if len(parts) > 3 {
		return bad(-1, "more than two ':'")
	}
	var secs int64
	p := 0
	for _, f := range parts {
		if f == "" {
			return bad(p, "empty field")
		}
		for i := 0; i < len(f); i++ {
			if f[i] < '0' || f[i] > '9' {
				return bad(p+i, fmt.Sprintf("unexpected character %q", f[i]))
			}
		}
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil || n > maxFieldSeconds {
			return bad(p, "number too large")
		}
		secs = secs*60 + n
		if secs > maxFieldSeconds {
			return bad(-1, "too large")
		}
		p += len(f) + 1
	}
	if hasFrac {
		if frac == "" {
			return bad(len(main)+1, "empty fraction")
		}
		for i := 0; i < len(frac); i++ {
			if frac[i] < '0' || frac[i] > '9' {
				return bad(len(main)+1+i, fmt.Sprintf("unexpected character %q", frac[i]))
			}
		}
		if frac[0] >= '5' {
			secs++
		}
	}
	return secs, nil
}

// ParseSlurmTime parses a --begin/--deadline value (COMPAT.md §1.5) relative
// to now, in now's location. Tokens may be combined ("tomorrow18:00"); a
// later date or time token replaces an earlier one.
func ParseSlurmTime(s string, now time.Time) (time.Time, error) {
	loc := now.Location()
	bad := func(pos int, why string) (time.Time, error) {
		return time.Time{}, &SyntaxError{What: "time", Input: s, Pos: pos, Reason: why}
	}
	var (
		haveDate, haveYear, haveTime bool
		year                         int
		month                        time.Month
		day                          int
		hour, min, sec               int
		abs                          *time.Time // set by now[+-N]
	)
	setTime := func(h, m, sc int) { hour, min, sec, haveTime = h, m, sc, true; abs = nil }
	setDay := func(t time.Time) {
		year, month, day = t.Date()
		haveDate, haveYear = true, true
		abs = nil
	}
	ls := strings.ToLower(s)
	if strings.TrimSpace(ls) == "" {
		return bad(-1, "empty")
	}
	i := 0
	for i < len(ls) {
		c := ls[i]
		switch {
		case c == ' ' || c == '\t' || c == '-' || c == 't' && i > 0 && isDigit(ls[i-1]) && i+1 < len(ls) && isDigit(ls[i+1]):
			// Separators between tokens: blanks, the '-' of
			// MM/DD-HH:MM and the 'T' of YYYY-MM-DDTHH:MM.
			i++
		case isDigit(c):
			j := i
			for j < len(ls) && isDigit(ls[j]) {
				j++
			}
			next := byte(0)
			if j < len(ls) {
				next = ls[j]
			}
			switch {
			case next == ':':
				h, m, sc, n, err := scanClock(ls[i:])
				if err != "" {
					return bad(i+n, err)
				}
				k := i + n
				// Optional AM/PM, possibly after blanks.
				for k < len(ls) && ls[k] == ' ' {
					k++
				}
				if strings.HasPrefix(ls[k:], "am") || strings.HasPrefix(ls[k:], "pm") {
					if h < 1 || h > 12 {
						return bad(i, "hour out of range for AM/PM")
					}
					h %= 12
					if ls[k] == 'p' {
						h += 12
					}
					n = k + 2 - i
				}
				setTime(h, m, sc)
				i += n
			case j-i == 4 && next == '-' && looksISO(ls[j+1:]):
				// YYYY-MM-DD
				y, _ := strconv.Atoi(ls[i:j])
				mo, n1, ok1 := scanNum(ls, j+1, 2)
				if !ok1 || n1 >= len(ls) || ls[n1] != '-' {
					return bad(j+1, "expected YYYY-MM-DD")
				}
				d, n2, ok2 := scanNum(ls, n1+1, 2)
				if !ok2 {
					return bad(n1+1, "expected YYYY-MM-DD")
				}
				if err := checkDate(y, mo, d); err != "" {
					return bad(i, err)
				}
				year, month, day, haveDate, haveYear, abs = y, time.Month(mo), d, true, true, nil
				i = n2
			case next == '/' || next == '.':
				mo, _ := strconv.Atoi(ls[i:j])
				d, n1, ok := scanNum(ls, j+1, 2)
				if !ok || j-i > 2 {
					return bad(i, "expected MM"+string(next)+"DD")
				}
				y, hy := 0, false
				if n1 < len(ls) && ls[n1] == next {
					yy, n2, ok := scanNum(ls, n1+1, 4)
					if !ok || (n2-n1-1 != 2 && n2-n1-1 != 4) {
						return bad(n1+1, "expected a two- or four-digit year")
					}
					y, hy, n1 = fullYear(yy, n2-n1-1), true, n2
				}
				if err := checkDate(yearOr(y, hy, now), mo, d); err != "" {
					return bad(i, err)
				}
				year, month, day, haveDate, haveYear, abs = y, time.Month(mo), d, true, hy, nil
				i = n1
			case j-i == 4 || j-i == 6:
				// MMDD[YY]
				mo, _ := strconv.Atoi(ls[i : i+2])
				d, _ := strconv.Atoi(ls[i+2 : i+4])
				y, hy := 0, false
				if j-i == 6 {
					yy, _ := strconv.Atoi(ls[i+4 : i+6])
					y, hy = fullYear(yy, 2), true
				}
				if err := checkDate(yearOr(y, hy, now), mo, d); err != "" {
					return bad(i, err)
				}
				year, month, day, haveDate, haveYear, abs = y, time.Month(mo), d, true, hy, nil
				i = j
			default:
				return bad(i, "unrecognised number")
			}
		default:
			word := ""
			for _, w := range []string{"now", "today", "tomorrow", "midnight", "noon", "elevenses", "fika", "teatime"} {
				if strings.HasPrefix(ls[i:], w) {
					word = w
					break
				}
			}
			switch word {
			case "":
				return bad(i, "unrecognised word")
			case "now":
				delta, n, err := scanDelta(ls[i+3:])
				if err != "" {
					return bad(i+3+n, err)
				}
				t := now.Add(time.Duration(delta) * time.Second)
				abs = &t
				haveDate, haveTime = false, false
				i += 3 + n
				continue
			case "today":
				setDay(now)
			case "tomorrow":
				setDay(now.AddDate(0, 0, 1))
			case "midnight":
				setTime(0, 0, 0)
			case "noon":
				setTime(12, 0, 0)
			case "elevenses":
				setTime(11, 0, 0)
			case "fika":
				setTime(15, 0, 0)
			case "teatime":
				setTime(16, 0, 0)
			}
			i += len(word)
		}
	}
	if abs != nil {
		return *abs, nil
	}
	switch {
	case haveDate:
		y := year
		if !haveYear {
			y = now.Year()
		}
		t := time.Date(y, month, day, hour, min, sec, 0, loc)
		if !haveYear && t.Before(now) {
			t = time.Date(y+1, month, day, hour, min, sec, 0, loc)
		}
		return t, nil
	case haveTime:
		y, mo, d := now.Date()
		t := time.Date(y, mo, d, hour, min, sec, 0, loc)
		if t.Before(now) {
			t = time.Date(y, mo, d+1, hour, min, sec, 0, loc)
		}
		return t, nil
	}
	return bad(-1, "no date or time")
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// looksISO reports whether s (after "YYYY-") continues as "MM-", so that
// "1122-10:00" (MMDD, then a clock) is not read as a year.
func looksISO(s string) bool {
	_, n, ok := scanNum(s, 0, 2)
	return ok && n < len(s) && s[n] == '-'
}

// scanNum reads 1..max digits at s[i:] and returns the value and the index
// after them.
func scanNum(s string, i, max int) (int, int, bool) {
	j := i
	for j < len(s) && j-i < max && isDigit(s[j]) {
		j++
	}
	if j == i {
		return 0, i, false
	}
	n, _ := strconv.Atoi(s[i:j])
	return n, j, true
}

// scanClock reads HH:MM[:SS] and returns its fields and length, or an error
// reason and the offset where it was found.
func scanClock(s string) (h, m, sec, n int, why string) {
	h, n, ok := scanNum(s, 0, 2)
	if !ok || n >= len(s) || s[n] != ':' {
		return 0, 0, 0, 0, "expected HH:MM"
	}
	m, n2, ok := scanNum(s, n+1, 2)
	if !ok || n2-n-1 != 2 {
		return 0, 0, 0, n + 1, "expected two-digit minutes"
	}
	n = n2
	if n < len(s) && s[n] == ':' {
		sec, n2, ok = scanNum(s, n+1, 2)
		if !ok || n2-n-1 != 2 {
			return 0, 0, 0, n + 1, "expected two-digit seconds"
		}
		n = n2
	}
	if h > 23 || m > 59 || sec > 59 {
		return 0, 0, 0, 0, "clock field out of range"
	}
	return h, m, sec, n, ""
}

// scanDelta reads the optional "+N[unit]" / "-N[unit]" after "now".
func scanDelta(s string) (int64, int, string) {
	if s == "" || (s[0] != '+' && s[0] != '-') {
		return 0, 0, ""
	}
	sign := int64(1)
	if s[0] == '-' {
		sign = -1
	}
	j := 1
	for j < len(s) && isDigit(s[j]) {
		j++
	}
	if j == 1 {
		return 0, 1, "expected a count after now" + s[:1]
	}
	n, err := strconv.ParseInt(s[1:j], 10, 64)
	if err != nil || n > maxFieldSeconds {
		return 0, 1, "count too large"
	}
	k := j
	for k < len(s) && s[k] >= 'a' && s[k] <= 'z' {
		k++
	}
	unit := strings.TrimSuffix(s[j:k], "s")
	mult := map[string]int64{"": 1, "second": 1, "minute": 60, "hour": 3600, "day": 86400, "week": 604800}[unit]
	if mult == 0 {
		return 0, j, "unknown unit " + strconv.Quote(s[j:k])
	}
	if n > maxFieldSeconds/mult {
		return 0, 1, "count too large"
	}
	return sign * n * mult, k, ""
}

func fullYear(yy, digits int) int {
	if digits == 2 {
		return 2000 + yy
	}
	return yy
}

func yearOr(y int, have bool, now time.Time) int {
	if have {
		return y
	}
	return now.Year()
}

// checkDate refuses dates that time.Date would silently normalise
// (02/30 → March 2), since Slurm's users mean a real day.
func checkDate(y, mo, d int) string {
	if mo < 1 || mo > 12 {
		return "month out of range"
	}
	if d < 1 || d > time.Date(y, time.Month(mo)+1, 0, 0, 0, 0, 0, time.UTC).Day() {
		// A year-less 02/29 is checked against this year; that matches
		// what the user will get.
		return "day out of range"
	}
	return ""
}

// yearSeconds is squeue's bound for a printable duration (print.c).
const yearSeconds = 365 * 24 * 3600

// FormatSqueueDuration prints seconds as squeue does (COMPAT.md §3.5): M:SS,
// H:MM:SS or D-HH:MM:SS, and INVALID when negative or beyond a year.
func FormatSqueueDuration(secs int64) string {
	if secs < 0 || secs > yearSeconds {
		return "INVALID"
	}
	d, h, m, s := secs/86400, secs/3600%24, secs/60%60, secs%60
	switch {
	case d > 0:
		return fmt.Sprintf("%d-%02d:%02d:%02d", d, h, m, s)
	case h > 0:
		return fmt.Sprintf("%d:%02d:%02d", h, m, s)
	}
	return fmt.Sprintf("%d:%02d", m, s)
}

// FormatLongDuration prints seconds as scontrol and sacct do: HH:MM:SS or
// D-HH:MM:SS, always with two-digit hours. Negative values print INVALID.
func FormatLongDuration(secs int64) string {
	if secs < 0 {
		return "INVALID"
	}
	d, h, m, s := secs/86400, secs/3600%24, secs/60%60, secs%60
	if d > 0 {
		return fmt.Sprintf("%d-%02d:%02d:%02d", d, h, m, s)
	}
	return fmt.Sprintf("%02d:%02d:%02d", h, m, s)
}

// FormatTimeLimit prints a job's time limit: UNLIMITED for api.NoLimit, else
// the squeue style or (long) the scontrol/sacct style. A zero limit (the
// partition default) is for the caller to resolve first.
func FormatTimeLimit(secs int64, long bool) string {
	if secs == api.NoLimit {
		return "UNLIMITED"
	}
	if long {
		return FormatLongDuration(secs)
	}
	return FormatSqueueDuration(secs)
}

// FormatTimestamp prints a Unix time as Slurm clients do (COMPAT.md §1.5):
// format is $SLURM_TIME_FORMAT ("" = ISO local, "relative", or strftime).
// now supplies both the location and, for "relative", today's date.
func FormatTimestamp(unix int64, format string, now time.Time) string {
	if unix == 0 {
		return "Unknown"
	}
	t := time.Unix(unix, 0).In(now.Location())
	switch format {
	case "":
		return t.Format("2006-01-02T15:04:05")
	case "relative":
		return Strftime(relativeFormat(t, now), t)
	}
	return Strftime(format, t)
}

// relativeFormat picks Slurm's relative style by calendar distance. Like
// Slurm it measures the distance as year*1000+day-of-year, so dates across
// New Year count as far apart.
func relativeFormat(t, now time.Time) string {
	dist := (t.Year()*1000 + t.YearDay()) - (now.Year()*1000 + now.YearDay())
	switch {
	case dist == -1:
		return "Ystday %H:%M"
	case dist == 0:
		return "%H:%M"
	case dist == 1:
		return "Tomorr %H:%M"
	case dist < -365 || dist > 365:
		return "%-d %b %Y"
	case dist < -1 || dist > 6:
		return "%-d %b %H:%M"
	}
	return "%a %H:%M"
}

// Strftime formats t with a C strftime(3) pattern in the C locale. Unknown
// conversions are copied literally, as glibc does. A '-' flag after '%'
// drops the padding ("%-d").
func Strftime(format string, t time.Time) string {
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c != '%' || i+1 >= len(format) {
			b.WriteByte(c)
			continue
		}
		start := i
		i++
		noPad := false
		if format[i] == '-' && i+1 < len(format) {
			noPad = true
			i++
		}
		num := func(n, width int, pad byte) {
			s := strconv.Itoa(n)
			if !noPad {
				for len(s) < width {
					s = string(pad) + s
				}
			}
			b.WriteString(s)
		}
		switch format[i] {
		case '%':
			b.WriteByte('%')
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 's':
			b.WriteString(strconv.FormatInt(t.Unix(), 10))
		case 'Y':
			num(t.Year(), 1, '0')
		case 'C':
			num(t.Year()/100, 2, '0')
		case 'y':
			num(t.Year()%100, 2, '0')
		case 'm':
			num(int(t.Month()), 2, '0')
		case 'd':
			num(t.Day(), 2, '0')
		case 'e':
			num(t.Day(), 2, ' ')
		case 'j':
			num(t.YearDay(), 3, '0')
		case 'H':
			num(t.Hour(), 2, '0')
		case 'k':
			num(t.Hour(), 2, ' ')
		case 'I':
			num((t.Hour()+11)%12+1, 2, '0')
		case 'l':
			num((t.Hour()+11)%12+1, 2, ' ')
		case 'M':
			num(t.Minute(), 2, '0')
		case 'S':
			num(t.Second(), 2, '0')
		case 'u':
			num((int(t.Weekday())+6)%7+1, 1, '0')
		case 'w':
			num(int(t.Weekday()), 1, '0')
		case 'p':
			if t.Hour() < 12 {
				b.WriteString("AM")
			} else {
				b.WriteString("PM")
			}
		case 'P':
			if t.Hour() < 12 {
				b.WriteString("am")
			} else {
				b.WriteString("pm")
			}
		case 'a':
			b.WriteString(t.Weekday().String()[:3])
		case 'A':
			b.WriteString(t.Weekday().String())
		case 'b', 'h':
			b.WriteString(t.Month().String()[:3])
		case 'B':
			b.WriteString(t.Month().String())
		case 'Z':
			name, _ := t.Zone()
			b.WriteString(name)
		case 'z':
			b.WriteString(t.Format("-0700"))
		case 'T':
			b.WriteString(t.Format("15:04:05"))
		case 'R':
			b.WriteString(t.Format("15:04"))
		case 'F':
			num(t.Year(), 1, '0')
			b.WriteString(t.Format("-01-02"))
		case 'D':
			b.WriteString(t.Format("01/02/06"))
		case 'c':
			b.WriteString(t.Format("Mon Jan  2 15:04:05 2006"))
		default:
			b.WriteString(format[start : i+1])
		}
	}
	return b.String()
}
