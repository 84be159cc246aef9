package sbatch

import (
	"fmt"
	"strings"
)

// GresReq is one generic resource asked for per node: --gres=name[:type][:count].
type GresReq struct {
	Name, Type string
	Count      int
}

func (g GresReq) String() string {
	if g.Type != "" {
		return fmt.Sprintf("%s:%s:%d", g.Name, g.Type, g.Count)
	}
	return fmt.Sprintf("%s:%d", g.Name, g.Count)
}

// MsgInvalidGres is Slurm's strerror for a gres request it cannot read or
// that no node could ever satisfy (ESLURM_INVALID_GRES).
const MsgInvalidGres = "Invalid generic resource (gres) specification"

// ParseGres reads a --gres list as Slurm's gres_job_state_validate does:
// comma-separated name[:type][:count], count default 1, a positive
// integer with an optional k/m/g suffix; "gres:" before the name is
// dropped. "none" is the empty list. The result is normalised and in
// the order given.
func ParseGres(s string) ([]GresReq, error) {
	if s == "" || strings.EqualFold(s, "none") {
		return nil, nil
	}
	var out []GresReq
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimPrefix(item, "gres:")
		parts := strings.Split(item, ":")
		if len(parts) > 3 || parts[0] == "" || !gresName(parts[0]) {
			return nil, fmt.Errorf("gres %q: bad name", item)
		}
		g := GresReq{Name: parts[0], Count: 1}
		rest := parts[1:]
		if len(rest) > 0 {
			if n, ok := gresCount(rest[len(rest)-1]); ok {
				g.Count = n
				rest = rest[:len(rest)-1]
			} else if len(rest) == 2 {
				return nil, fmt.Errorf("gres %q: bad count %q", item, rest[1])
			}
		}
		if len(rest) == 1 {
			if rest[0] == "" || !gresName(rest[0]) {
				return nil, fmt.Errorf("gres %q: bad type %q", item, rest[0])
			}
			g.Type = rest[0]
		}
		if g.Count <= 0 {
			return nil, fmt.Errorf("gres %q: count must be positive", item)
		}
		out = append(out, g)
	}
	return out, nil
}

// FormatGres writes a list as ParseGres normalises it.
func FormatGres(gs []GresReq) string {
	s := make([]string, len(gs))
	for i, g := range gs {
		s[i] = g.String()
	}
	return strings.Join(s, ",")
}

// ParseTypedCount reads --gpus/--gpus-per-node/--gpus-per-task:
// [type:]count with a positive count.
func ParseTypedCount(s string) (typ string, n int, err error) {
	c := s
	if t, rest, ok := strings.Cut(s, ":"); ok {
		typ, c = t, rest
		if typ == "" || !gresName(typ) {
			return "", 0, fmt.Errorf("%q: bad type", s)
		}
	}
	n, ok := gresCount(c)
	if !ok || n <= 0 {
		return "", 0, fmt.Errorf("%q: bad count", s)
	}
	return typ, n, nil
}

func gresName(s string) bool {
	if s == "" || !(s[0] >= 'a' && s[0] <= 'z' || s[0] >= 'A' && s[0] <= 'Z') {
		return false // names and types start with a letter: "-1" is a bad count
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// gresCount reads a gres count: digits with an optional k, m or g
// (powers of 1024), as node counts but one suffix more.
func gresCount(s string) (int, bool) { return scaledCount(s, "kmg") }

// ParseConstraint reads -C: features joined by & (all) or | (any), not
// both; brackets, counts and other operators are refused. It returns the
// features and whether any one of them suffices.
func ParseConstraint(s string) (feats []string, anyOf bool, err error) {
	if s == "" {
		return nil, false, nil
	}
	if strings.ContainsAny(s, "[]*(),") {
		return nil, false, fmt.Errorf("constraint %q: only a&b or a|b is supported", s)
	}
	and, or := strings.Contains(s, "&"), strings.Contains(s, "|")
	if and && or {
		return nil, false, fmt.Errorf("constraint %q mixes & and |", s)
	}
	sep := "&"
	if or {
		sep = "|"
	}
	for _, f := range strings.Split(s, sep) {
		if !gresName(f) {
			return nil, false, fmt.Errorf("constraint %q: bad feature %q", s, f)
		}
		feats = append(feats, f)
	}
	return feats, or, nil
}
