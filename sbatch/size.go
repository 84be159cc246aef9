package sbatch

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ParseSize reads a --load size: a non-negative decimal number with an
// optional decimal suffix k, M, G or T (any case; 1k = 1000) and an
// optional trailing B. Loads are data units, not memory, hence powers of
// ten (DESIGN.md §1).
func ParseSize(s string) (float64, error) {
	bad := func(why string) (float64, error) {
		return 0, &SyntaxError{What: "size", Input: s, Pos: -1, Reason: why}
	}
	num := strings.TrimSuffix(strings.TrimSuffix(s, "B"), "b")
	mult := 1.0
	if num != "" {
		switch num[len(num)-1] {
		case 'k', 'K':
			mult = 1e3
		case 'm', 'M':
			mult = 1e6
		case 'g', 'G':
			mult = 1e9
		case 't', 'T':
			mult = 1e12
		}
		if mult != 1 {
			num = num[:len(num)-1]
		}
	}
	if num == "" {
		return bad("no number")
	}
	// strconv accepts forms a user would not mean ("inf", "0x1p3", "1_0");
	// only plain decimals are sizes.
	for i := 0; i < len(num); i++ {
		if !isDigit(num[i]) && num[i] != '.' {
			return bad(fmt.Sprintf("unexpected %q", num[i]))
		}
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return bad("not a number")
	}
	v *= mult
	if math.IsInf(v, 0) {
		return bad("too large")
	}
	return v, nil
}

// ParseMemMB reads a --mem value (COMPAT.md §1.3, Slurm's str_to_mbytes):
// an integer in MiB, or with a K, M, G or T suffix (any case, powers of
// 1024) and an optional trailing B. K rounds up to whole MiB. 0 means all
// the node's memory.
func ParseMemMB(s string) (int64, error) {
	bad := func(why string) (int64, error) {
		return 0, &SyntaxError{What: "size", Input: s, Pos: -1, Reason: why}
	}
	num := s
	if strings.HasSuffix(num, "B") || strings.HasSuffix(num, "b") {
		num = num[:len(num)-1]
		// A bare "B" (12B) has no unit letter before it; Slurm rejects it.
		if num == "" || isDigit(num[len(num)-1]) {
			return bad("B without a unit")
		}
	}
	shift := -1 // unit of the number, as a power of 1024 relative to MiB
	if num != "" {
		switch num[len(num)-1] {
		case 'k', 'K':
			shift = 0
		case 'm', 'M':
			shift = 1
		case 'g', 'G':
			shift = 2
		case 't', 'T':
			shift = 3
		}
	}
	if shift >= 0 {
		num = num[:len(num)-1]
	} else {
		shift = 1
	}
	if num == "" || !allDigits(num) || len(num) > 18 {
		return bad("not a whole number")
	}
	n, _ := strconv.ParseInt(num, 10, 64)
	switch shift {
	case 0:
		return (n + 1023) / 1024, nil
	case 1:
		return n, nil
	}
	factor := int64(1) << (10 * (shift - 1))
	if n > math.MaxInt64/factor {
		return bad("too large")
	}
	return n * factor, nil
}
