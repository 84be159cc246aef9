package api

import (
	"net/url"
	"testing"
)

// Values encodes as net/url does, which horad's net/http parses.
func TestValuesEncodeAsNetURL(t *testing.T) {
	for _, in := range []map[string][]string{
		{},
		{"id": {"3", "4"}, "all": {"1"}},
		{"name": {"a b&c=d/é%+~._-"}, "user": {"x", ""}, "": {"k"}},
		{"pbs_state": {"QR"}, "since": {"-1"}, "z\x00\xff": {"\r\n\t"}},
	} {
		want := url.Values(in).Encode()
		if got := Values(in).Encode(); got != want {
			t.Errorf("%q: Encode = %q, net/url %q", in, got, want)
		}
		back, err := url.ParseQuery(Values(in).Encode())
		if err != nil || len(back) != len(in) {
			t.Errorf("%q: net/url reads %q back as %q (%v)", in, Values(in).Encode(), back, err)
		}
	}
}
