package sbatch

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Limits of the hostlist grammar. Slurm refuses a single range of more than
// 65536 hosts ("Too many hosts in range"); the total bound keeps a product
// such as a[1-65536]b[1-65536] from exhausting memory.
const (
	maxRangeHosts = 65536
	maxListHosts  = 1 << 20
	maxNumDigits  = 18 // fits int64; longer digit runs are not numbers
)

func hostlistErr(s string, pos int, why string) error {
	return &SyntaxError{What: "hostlist", Input: s, Pos: pos, Reason: why}
}

// ExpandHostlist expands a Slurm hostlist expression into host names, in
// the order `scontrol show hostnames` prints them. Elements are separated
// by commas or blanks outside brackets; a bracket holds comma-separated
// numbers and lo-hi ranges, each zero-padded to the width of its lower
// bound (n[01-03,7] → n01 n02 n03 n7). Several brackets in one element form
// a product (r[1-2]n[1-2] → r1n1 r1n2 r2n1 r2n2); text may sit between
// brackets but not after the last one, as in Slurm. Duplicates are kept.
func ExpandHostlist(s string) ([]string, error) {
	var out []string
	start, depth := 0, 0
	flush := func(end int) error {
		if end > start {
			names, err := expandElement(s, start, end, maxListHosts-len(out))
			if err != nil {
				return err
			}
			out = append(out, names...)
		}
		start = end + 1
		return nil
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '[':
			if depth > 0 {
				return nil, hostlistErr(s, i, "nested '['")
			}
			depth++
		case ']':
			if depth == 0 {
				return nil, hostlistErr(s, i, "']' without '['")
			}
			depth--
		case ',', ' ', '\t', '\n':
			if depth > 0 {
				if c != ',' {
					return nil, hostlistErr(s, i, "blank inside brackets")
				}
				continue
			}
			if err := flush(i); err != nil {
				return nil, err
			}
		}
	}
	if depth > 0 {
		return nil, hostlistErr(s, strings.LastIndexByte(s, '['), "unclosed '['")
	}
	if err := flush(len(s)); err != nil {
		return nil, err
	}
	return out, nil
}

// bracket is one [..] of an element: its numbers, already formatted, and
// the literal text that precedes it.
type bracket struct {
	before string
	nums   []string
}

func expandElement(s string, start, end, budget int) ([]string, error) {
	el := s[start:end]
	var bs []bracket
	lit := 0
	for {
		open := strings.IndexByte(el[lit:], '[')
		if open < 0 {
			break
		}
		open += lit
		closing := strings.IndexByte(el[open:], ']') + open
		nums, err := expandRanges(s, start+open+1, el[open+1:closing])
		if err != nil {
			return nil, err
		}
		bs = append(bs, bracket{before: el[lit:open], nums: nums})
		lit = closing + 1
	}
	if len(bs) == 0 {
		return []string{el}, nil
	}
	if lit < len(el) {
		// Slurm rejects a suffix after the last bracket (n[1-2]x).
		return nil, hostlistErr(s, start+lit, "text after the last ']'")
	}
	total := 1
	for _, b := range bs {
		total *= len(b.nums)
		if total > budget {
			return nil, hostlistErr(s, start, "too many hosts")
		}
	}
	// Slurm's order: the last bracket varies fastest; of the others the
	// first varies fastest and the one before last slowest (measured with
	// scontrol 22.05: a[1-2]b[1-2]c[1-2] → a1b1c1 a1b1c2 a2b1c1 ...).
	k := len(bs)
	order := make([]int, 0, k) // bracket indices, fastest first
	order = append(order, k-1)
	for i := 0; i < k-1; i++ {
		order = append(order, i)
	}
	idx := make([]int, k)
	out := make([]string, 0, total)
	var b strings.Builder
	for n := 0; n < total; n++ {
		b.Reset()
		for i, br := range bs {
			b.WriteString(br.before)
			b.WriteString(br.nums[idx[i]])
		}
		out = append(out, b.String())
		for _, d := range order {
			idx[d]++
			if idx[d] < len(bs[d].nums) {
				break
			}
			idx[d] = 0
		}
	}
	return out, nil
}

// expandRanges expands the inside of one bracket, found at s[pos:].
func expandRanges(s string, pos int, inner string) ([]string, error) {
	var out []string
	for _, r := range strings.Split(inner, ",") {
		if r == "" {
			return nil, hostlistErr(s, pos, "empty range")
		}
		lo, hi, isRange := strings.Cut(r, "-")
		loN, err := rangeNum(s, pos, lo)
		if err != nil {
			return nil, err
		}
		hiN := loN
		if isRange {
			if hiN, err = rangeNum(s, pos+len(lo)+1, hi); err != nil {
				return nil, err
			}
			if hiN < loN {
				return nil, hostlistErr(s, pos, fmt.Sprintf("invalid range %q: end before start", r))
			}
		}
		if hiN-loN >= maxRangeHosts {
			return nil, hostlistErr(s, pos, fmt.Sprintf("too many hosts in range %q", r))
		}
		if len(out)+int(hiN-loN)+1 > maxListHosts {
			return nil, hostlistErr(s, pos, "too many hosts")
		}
		for n := loN; n <= hiN; n++ {
			out = append(out, padNum(n, len(lo)))
		}
		pos += len(r) + 1
	}
	return out, nil
}

func rangeNum(s string, pos int, d string) (int64, error) {
	if d == "" {
		return 0, hostlistErr(s, pos, "missing number")
	}
	for i := 0; i < len(d); i++ {
		if !isDigit(d[i]) {
			return 0, hostlistErr(s, pos+i, fmt.Sprintf("unexpected %q in range", d[i]))
		}
	}
	if len(d) > maxNumDigits {
		return 0, hostlistErr(s, pos, "number too long")
	}
	n, _ := strconv.ParseInt(d, 10, 64)
	return n, nil
}

func padNum(n int64, width int) string {
	d := strconv.FormatInt(n, 10)
	if len(d) < width {
		d = strings.Repeat("0", width-len(d)) + d
	}
	return d
}

// hostName splits a name into the text before its trailing digits and the
// number they spell. ok is false when there are no trailing digits (or too
// many to be a number), and the name then stands alone.
type hostName struct {
	prefix string
	digits string
	num    int64
	ok     bool
}

func splitHost(name string) hostName {
	i := len(name)
	for i > 0 && isDigit(name[i-1]) {
		i--
	}
	if i == len(name) || len(name)-i > maxNumDigits {
		return hostName{prefix: name}
	}
	n, _ := strconv.ParseInt(name[i:], 10, 64)
	return hostName{prefix: name[:i], digits: name[i:], num: n, ok: true}
}

// CompressHostlist writes names as a hostlist expression the way
// `scontrol show hostlist` does: it keeps the given order, puts each run of
// consecutive names with the same prefix in one bracket, and merges
// ascending consecutive numbers into lo-hi ranges when they print with the
// same zero padding (n[9-11], n[099-100], but n[08,9]). Duplicates stay.
// Callers wanting Slurm's node order (SLURM_JOB_NODELIST) sort first with
// SortHostnames.
func CompressHostlist(names []string) string {
	var b strings.Builder
	for i := 0; i < len(names); {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		h := splitHost(names[i])
		if !h.ok {
			b.WriteString(names[i])
			i++
			continue
		}
		j := i + 1
		for j < len(names) {
			g := splitHost(names[j])
			if !g.ok || g.prefix != h.prefix {
				break
			}
			j++
		}
		b.WriteString(h.prefix)
		if j == i+1 {
			b.WriteString(h.digits)
			i = j
			continue
		}
		b.WriteByte('[')
		for k := i; k < j; {
			lo := splitHost(names[k])
			width := len(lo.digits)
			m := k + 1
			for m < j {
				nx := splitHost(names[m])
				// Extend while the next number is one more and prints
				// the same at the range's width.
				if nx.num != lo.num+int64(m-k) || padNum(nx.num, width) != nx.digits {
					break
				}
				m++
			}
			if k > i {
				b.WriteByte(',')
			}
			b.WriteString(lo.digits)
			if m > k+1 {
				b.WriteByte('-')
				b.WriteString(splitHost(names[m-1]).digits)
			}
			k = m
		}
		b.WriteByte(']')
		i = j
	}
	return b.String()
}

// SortHostnames sorts names in place in Slurm's node order: by prefix, then
// numerically by trailing number, then by padding width, so that
// CompressHostlist(SortHostnames(x)) gives the shortest ranges.
func SortHostnames(names []string) {
	slices.SortStableFunc(names, func(a, b string) int {
		ha, hb := splitHost(a), splitHost(b)
		if c := strings.Compare(ha.prefix, hb.prefix); c != 0 {
			return c
		}
		if ha.ok != hb.ok {
			if !ha.ok {
				return -1
			}
			return 1
		}
		if ha.num != hb.num {
			if ha.num < hb.num {
				return -1
			}
			return 1
		}
		return len(ha.digits) - len(hb.digits)
	})
}
