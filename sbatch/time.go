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
	// Split into numeric fields. An empty field (":5", "3::") is rejected
	// rather than read as zero, so typos do not silently shorten a limit;
	// only "D-" (days alone) is allowed, because Slurm accepts it.
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
		if rest == "" {
			rest = "0"
		}
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

// ParseSlurmTime parses a --begin/--deadline value (COMPAT.md §1.5) the
// way Slurm's parse_time reads it, relative to now and in now's location:
//
//   - tokens may be combined ("tomorrow18:00", "teatime 12/25"); a later
//     date or clock replaces an earlier one;
//   - a clock without a date is today if it is later than now by the
//     minute, else tomorrow; a date without a clock is 00:00:00; a date
//     without a year is this year if later than now by the minute, else
//     next year;
//   - "now" must be followed by nothing or by "+N[unit]"/"-N[unit]";
//   - "uts<seconds>" is a Unix time.
//
// hora refuses what Slurm would silently normalise (02/30) or read as
// "no time at all" (an empty string).
func ParseSlurmTime(s string, now time.Time) (time.Time, error) {
	loc := now.Location()
	bad := func(pos int, why string) (time.Time, error) {
		return time.Time{}, &SyntaxError{What: "time", Input: s, Pos: pos, Reason: why}
	}
	ls := strings.ToLower(s)
	if rest, ok := strings.CutPrefix(ls, "uts"); ok {
		n, err := strconv.ParseInt(rest, 10, 64)
		if err != nil || n < 1000000 || !allDigits(rest) {
			return bad(3, "expected Unix seconds (at least 1000000)")
		}
		return time.Unix(n, 0).In(loc), nil
	}
	// Unset fields are -1, as in Slurm; seconds default to 0.
	year, month, day, hour, min, sec := -1, -1, -1, -1, -1, 0
	setClock := func(h, m, sc int) { hour, min, sec = h, m, sc }
	setDate := func(t time.Time) {
		y, mo, d := t.Date()
		year, month, day = y, int(mo), d
	}
	keywords := []string{"today", "tomorrow", "midnight", "noon", "elevenses", "fika", "teatime", "now"}
	for i := 0; i < len(ls); {
		word := ""
		for _, w := range keywords {
			if strings.HasPrefix(ls[i:], w) {
				word = w
				break
			}
		}
		switch word {
		case "today":
			setDate(now)
		case "tomorrow":
			setDate(now.AddDate(0, 0, 1))
		case "midnight":
			setClock(0, 0, 0)
		case "noon":
			setClock(12, 0, 0)
		case "elevenses":
			setClock(11, 0, 0)
		case "fika":
			setClock(15, 0, 0)
		case "teatime":
			setClock(16, 0, 0)
		case "now":
			delta, n, why := scanDelta(ls[i+3:])
			if why != "" {
				return bad(i+3+n, why)
			}
			t := now.Add(time.Duration(delta) * time.Second)
			setDate(t)
			setClock(t.Hour(), t.Minute(), t.Second())
			i += 3 + n
			continue
		}
		if word != "" {
			i += len(word)
			continue
		}
		c := ls[i]
		switch {
		case c == ' ' || c == '\t' || c == '-' || c == 't':
			// Separators: blanks, the '-' of MM/DD-HH:MM and the 'T'
			// of YYYY-MM-DDTHH:MM.
			i++
		case !isDigit(c):
			return bad(i, "unexpected "+strconv.QuoteRune(rune(s[i])))
		case i+1 < len(ls) && ls[i+1] == ':' || i+2 < len(ls) && ls[i+2] == ':':
			h, m, sc, n, why := scanClock(ls[i:])
			if why != "" {
				return bad(i+n, why)
			}
			setClock(h, m, sc)
			i += n
		default:
			y, mo, d, n, why := scanDate(ls[i:], now.Year())
			if why != "" {
				return bad(i+n, why)
			}
			year, month, day = y, mo, d
			i += n
		}
	}
	if hour < 0 && month < 0 {
		return bad(-1, "no date or time")
	}
	if hour < 0 {
		hour, min = 0, 0
	}
	later := func(mo, d int) bool { // is (mo, d, hour, min) after now, by the minute?
		a := [4]int{mo, d, hour, min}
		b := [4]int{int(now.Month()), now.Day(), now.Hour(), now.Minute()}
		for k := range a {
			if a[k] != b[k] {
				return a[k] > b[k]
			}
		}
		return false
	}
	if month < 0 {
		if later(int(now.Month()), now.Day()) {
			setDate(now)
		} else {
			setDate(now.AddDate(0, 0, 1))
		}
	}
	if year < 0 {
		year = now.Year()
		if !later(month, day) {
			year++
		}
	}
	if why := checkDate(year, month, day); why != "" {
		return bad(-1, why)
	}
	return time.Date(year, time.Month(month), day, hour, min, sec, 0, loc), nil
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// scanClock reads HH:MM[:SS] (one- or two-digit hours, two-digit minutes
// and seconds) and an optional AM/PM after blanks. It returns the fields
// and the length read, or a reason and the offset where it failed.
func scanClock(s string) (h, m, sec, n int, why string) {
	h, n, _ = scanNum(s, 0, 2)
	if h > 23 {
		return 0, 0, 0, 0, "hour out of range"
	}
	n++ // the ':' the caller saw
	m, n2, ok := scanNum(s, n, 2)
	if !ok || n2-n != 2 {
		return 0, 0, 0, n, "expected two-digit minutes"
	}
	if m > 59 {
		return 0, 0, 0, n, "minute out of range"
	}
	n = n2
	if n < len(s) && s[n] == ':' {
		sec, n2, ok = scanNum(s, n+1, 2)
		if !ok || n2-n-1 != 2 {
			return 0, 0, 0, n + 1, "expected two-digit seconds"
		}
		if sec > 59 {
			return 0, 0, 0, n + 1, "second out of range"
		}
		n = n2
	}
	k := n
	for k < len(s) && (s[k] == ' ' || s[k] == '\t') {
		k++
	}
	switch {
	case strings.HasPrefix(s[k:], "pm"):
		// 12 PM is noon; 13 PM and above are nonsense.
		switch {
		case h < 12:
			h += 12
		case h > 12:
			return 0, 0, 0, k, "hour out of range for PM"
		}
		n = k + 2
	case strings.HasPrefix(s[k:], "am"):
		switch {
		case h == 12:
			h = 0
		case h > 12:
			return 0, 0, 0, k, "hour out of range for AM"
		}
		n = k + 2
	}
	return h, m, sec, n, ""
}

// scanDate reads YYYY-MM-DD, or MM[/.]DD[[/.]YY] (also MMDD[YY]), and
// returns year (-1 when not given), month, day and the length read.
func scanDate(s string, thisYear int) (y, mo, d, n int, why string) {
	if len(s) >= 8 && s[4] == '-' && s[7] == '-' {
		if !allDigits(s[:4]) || !allDigits(s[5:7]) {
			return 0, 0, 0, 0, "expected YYYY-MM-DD"
		}
		y, _ = strconv.Atoi(s[:4])
		mo, _ = strconv.Atoi(s[5:7])
		d, n, ok := scanNum(s, 8, 2)
		if !ok {
			return 0, 0, 0, 8, "expected a day"
		}
		if why := checkDate(y, mo, d); why != "" {
			return 0, 0, 0, 0, why
		}
		return y, mo, d, n, ""
	}
	mo, n, _ = scanNum(s, 0, 2)
	if n < len(s) && (s[n] == '/' || s[n] == '.') {
		n++
	}
	d, n2, ok := scanNum(s, n, 2)
	if !ok {
		return 0, 0, 0, n, "expected a day"
	}
	n = n2
	if n < len(s) && (s[n] == '/' || s[n] == '.') {
		n++
	}
	y = -1
	if n < len(s) && isDigit(s[n]) {
		yy, n2, _ := scanNum(s, n, 2)
		if n2-n != 2 {
			return 0, 0, 0, n, "expected a two-digit year"
		}
		y, n = 2000+yy, n2
	}
	// A year-less 02/29 is checked against this year: that is the year it
	// would get unless it is already past.
	if why := checkDate(max(y, thisYear), mo, d); why != "" {
		return 0, 0, 0, 0, why
	}
	return y, mo, d, n, ""
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

// deltaUnits are the units "now+N" accepts, longest first so that a plural
// is not read as its singular plus a stray 's'.
var deltaUnits = []struct {
	name string
	secs int64
}{
	{"seconds", 1}, {"second", 1}, {"minutes", 60}, {"minute", 60}, {"hours", 3600},
	{"hour", 3600}, {"days", 86400}, {"day", 86400}, {"weeks", 604800}, {"week", 604800},
}

// scanDelta reads what follows "now": blanks, then either the end or a
// sign, a count (blanks allowed) and an optional unit (default seconds).
func scanDelta(s string) (delta int64, n int, why string) {
	for n < len(s) && (s[n] == ' ' || s[n] == '\t') {
		n++
	}
	if n == len(s) {
		return 0, n, ""
	}
	if s[n] != '+' && s[n] != '-' {
		return 0, n, "only +N or -N may follow now"
	}
	sign := int64(1)
	if s[n] == '-' {
		sign = -1
	}
	n++
	digits := 0
	mult := int64(1)
	for n < len(s) {
		c := s[n]
		if c == ' ' || c == '\t' {
			n++
			continue
		}
		if isDigit(c) {
			if delta > maxFieldSeconds {
				return 0, n, "count too large"
			}
			delta = delta*10 + int64(c-'0')
			digits++
			n++
			continue
		}
		unit := false
		for _, u := range deltaUnits {
			if strings.HasPrefix(s[n:], u.name) {
				mult, n, unit = u.secs, n+len(u.name), true
				break
			}
		}
		if !unit {
			return 0, n, "unknown unit"
		}
		break
	}
	if digits == 0 {
		return 0, n, "expected a count"
	}
	if delta > maxFieldSeconds/mult {
		return 0, n, "count too large"
	}
	return sign * delta * mult, n, ""
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return true
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
// format is $SLURM_TIME_FORMAT ("" or "standard" = ISO local, "relative",
// or a strftime pattern).
// now supplies both the location and, for "relative", today's date.
func FormatTimestamp(unix int64, format string, now time.Time) string {
	switch unix {
	case 0, infiniteTime:
		return "Unknown"
	case noValTime:
		return "None"
	}
	t := time.Unix(unix, 0).In(now.Location())
	switch {
	case format == "relative":
		return Strftime(relativeFormat(t, now), t)
	case format == "" || format == "standard" || !strings.Contains(format, "%") || len(format) >= 32:
		// Slurm falls back to the standard form for "standard" and for
		// formats without a conversion or too long for its buffer.
		return t.Format("2006-01-02T15:04:05")
	}
	return Strftime(format, t)
}

// Slurm's 32-bit sentinels that reach time printing: INFINITE prints as
// Unknown, NO_VAL as None.
const (
	infiniteTime = 0xffffffff
	noValTime    = 0xfffffffe
)

// relativeFormat picks Slurm's relative style by calendar distance. Like
// Slurm it measures the distance as year*1000+day-of-year, so dates across
// New Year count as far apart.
func relativeFormat(t, now time.Time) string {
	dist := (t.Year()*1000 + t.YearDay()) - (now.Year()*1000 + now.YearDay())
	switch {
	case dist == -1:
		return "Ystday %H:%M"
	case dist == 0:
		return "%H:%M:%S"
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
