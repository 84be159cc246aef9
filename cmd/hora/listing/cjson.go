package listing

import (
	"math"
	"strconv"
	"strings"

	"hora/api"
)

// CJSON writes JSON laid out as cJSON_Print lays it out, which OpenPBS's
// `-F json` outputs are: "{", then each member on its own line indented by
// tabs as "\t\"key\":\tvalue", members separated by ",", the closing brace
// on its own line at the parent's depth ("{\n}" when empty).
type CJSON struct {
	B     []byte
	depth int
	count []int
}

// Open starts an object (after Key, or at the top).
func (j *CJSON) Open() {
	j.B = append(j.B, '{')
	j.depth++
	j.count = append(j.count, 0)
}

// Close ends the innermost object.
func (j *CJSON) Close() {
	j.count = j.count[:len(j.count)-1]
	j.depth--
	j.B = append(j.B, '\n')
	for range j.depth {
		j.B = append(j.B, '\t')
	}
	j.B = append(j.B, '}')
}

// Key starts a member of the innermost object.
func (j *CJSON) Key(k string) {
	if j.count[len(j.count)-1] > 0 {
		j.B = append(j.B, ',')
	}
	j.count[len(j.count)-1]++
	j.B = append(j.B, '\n')
	for range j.depth {
		j.B = append(j.B, '\t')
	}
	j.B = api.AppendJSONString(j.B, k)
	j.B = append(j.B, ':', '\t')
}

// Str writes a string member.
func (j *CJSON) Str(k, v string) {
	j.Key(k)
	j.B = api.AppendJSONString(j.B, v)
}

// Num writes a member whose value is already a JSON number.
func (j *CJSON) Num(k, v string) {
	j.Key(k)
	j.B = append(j.B, v...)
}

// Parsed writes a member as pbs_json_insert_parsed does: a value that reads
// as a number is a number, anything else a string.
func (j *CJSON) Parsed(k, v string) {
	if f, ok := parseNumber(v); ok {
		j.Num(k, cjsonNumber(f))
		return
	}
	j.Str(k, v)
}

// parseNumber reads v as strtod would take it whole.
func parseNumber(v string) (float64, bool) {
	if v == "" || v[0] == '+' || strings.ContainsAny(v, "xXinIN_") {
		return 0, false
	}
	f, err := strconv.ParseFloat(v, 64)
	return f, err == nil
}

// cjsonNumber prints a number as cJSON does: an integral value as an
// integer, else the shortest of %1.15g and %1.17g that reads back the same.
func cjsonNumber(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return strconv.FormatInt(int64(f), 10)
	}
	if s := strconv.FormatFloat(f, 'g', 15, 64); mustParse(s) == f {
		return s
	}
	return strconv.FormatFloat(f, 'g', 17, 64)
}

func mustParse(s string) float64 {
	f, _ := strconv.ParseFloat(s, 64)
	return f
}

// Attrs writes attribute pairs as one object: "a.b" names become member b of
// a nested object a, as PBS groups resources (Resource_List, resources_used).
// Pairs of one group must be adjacent, as attribute tables list them.
func (j *CJSON) Attrs(attrs []Attr) {
	j.Open()
	j.Members(attrs)
	j.Close()
}

// Members writes attribute pairs into the object open now (see Attrs).
func (j *CJSON) Members(attrs []Attr) {
	for k := 0; k < len(attrs); k++ {
		name, res, isRes := strings.Cut(attrs[k].Name, ".")
		if !isRes {
			j.Parsed(name, attrs[k].Value)
			continue
		}
		j.Key(name)
		j.Open()
		j.Parsed(res, attrs[k].Value)
		for k+1 < len(attrs) && strings.HasPrefix(attrs[k+1].Name, name+".") {
			k++
			j.Parsed(attrs[k].Name[len(name)+1:], attrs[k].Value)
		}
		j.Close()
	}
}

// Strs writes a string array member, inline as cJSON prints arrays.
func (j *CJSON) Strs(k string, vs []string) {
	j.Key(k)
	j.B = append(j.B, '[')
	for i, v := range vs {
		if i > 0 {
			j.B = append(j.B, ',', ' ')
		}
		j.B = api.AppendJSONString(j.B, v)
	}
	j.B = append(j.B, ']')
}
