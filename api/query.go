package api

import (
	"sort"
	"strings"
)

// Values are a request's query parameters, encoded as net/url's Values
// encodes them (keys sorted, RFC 3986 unreserved bytes kept, space as '+',
// the rest %XX), without linking net/url into the client: it imports
// net/netip, whose initialisation every client process would pay for.
// horad parses them with net/http as before.
type Values map[string][]string

// Add appends a value to key.
func (v Values) Add(key, value string) { v[key] = append(v[key], value) }

// Set replaces key's values with value.
func (v Values) Set(key, value string) { v[key] = []string{value} }

// Encode gives "a=1&b=x+y", keys in order, values in the order added.
func (v Values) Encode() string {
	keys := make([]string, 0, len(v))
	for k := range v {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		for _, val := range v[k] {
			if b.Len() > 0 {
				b.WriteByte('&')
			}
			queryEscape(&b, k)
			b.WriteByte('=')
			queryEscape(&b, val)
		}
	}
	return b.String()
}

// queryEscape writes s as url.QueryEscape would.
func queryEscape(b *strings.Builder, s string) {
	const hex = "0123456789ABCDEF"
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '_', c == '.', c == '~':
			b.WriteByte(c)
		case c == ' ':
			b.WriteByte('+')
		default:
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		}
	}
}
