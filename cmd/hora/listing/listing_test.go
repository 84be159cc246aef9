package listing

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestAppendCol(t *testing.T) {
	cases := []struct {
		s    string
		c    Column
		want string
	}{
		{"abc", Column{}, "abc"},
		{"abc", Column{Width: 5, Right: true, Trunc: true}, "  abc"},
		{"abc", Column{Width: 5, Trunc: true}, "abc  "},
		{"abcdefgh", Column{Width: 5, Right: true, Trunc: true}, "abcde"},
		{"abcdefgh", Column{Width: 5, Trunc: true}, "abcde"},
		{"1-00:00:00", Column{Width: 5, Right: true}, "1-00:00:00"},
		{"abcdefgh", Column{Width: 5, Trunc: true, Mark: '*'}, "abcd*"},
		{"abcde", Column{Width: 5, Trunc: true, Mark: '*'}, "abcde"},
	}
	for _, c := range cases {
		if got := string(AppendCol(nil, c.s, c.c)); got != c.want {
			t.Errorf("AppendCol(%q, %+v) = %q, want %q", c.s, c.c, got, c.want)
		}
	}
}

type row struct {
	id   int
	name string
}

var testTable = NewTable([]Field[row]{
	{Letter: 'i', Names: []string{"JobId", "id"}, Header: "ID", Value: func(_ *Ctx, r *row) string { return strconv.Itoa(r.id) }},
	{Letter: 'n', Names: []string{"Name"}, Header: "NAME", Keep: true, Value: func(_ *Ctx, r *row) string { return r.name }},
	{Names: []string{"Empty"}, Header: "E", Value: func(*Ctx, *row) string { return "" }},
})

func TestParseAndWrite(t *testing.T) {
	rows := []row{{1, "alpha"}, {22, "b"}}
	c := NewCtx(time.Unix(0, 0), "", func(s int64) string { return strconv.FormatInt(s, 10) })
	f, bad := testTable.ParsePercent("<%.3i|%2n%%z>")
	if len(bad) != 1 || bad[0] != "z" {
		t.Errorf("bad letters %q", bad)
	}
	var b bytes.Buffer
	if err := f.Write(&b, rows, c, true); err != nil {
		t.Fatal(err)
	}
	// Keep never cuts "alpha" to 2, but the header is cut to the width as
	// squeue cuts its titles ("TIME_LIMI" in -l); the unknown letter's
	// token is printed as written, with one '%' (Slurm's
	// job_format_add_invalid).
	want := "< ID|NA%z>\n<  1|alpha%z>\n< 22|b %z>\n"
	if b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
	f, bad = testTable.ParseNames("ID:.4,name:3x,nosuch", 20)
	if len(bad) != 1 || bad[0] != "nosuch" {
		t.Errorf("bad names %q", bad)
	}
	if got := string(f.AppendRow(nil, c, &rows[0])); got != "   1alphax\n" {
		t.Errorf("-O row %q", got)
	}
	attrs := testTable.AppendAttrs(nil, c, &rows[1])
	if len(attrs) != 2 || attrs[0] != (Attr{"JobId", "22"}) || attrs[1] != (Attr{"Name", "b"}) {
		t.Errorf("attrs %v", attrs)
	}
}

func TestDuplicateNamePanics(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "twice") {
			t.Errorf("recover %v", r)
		}
	}()
	NewTable([]Field[row]{{Names: []string{"a"}}, {Names: []string{"A"}}})
}

func TestCJSON(t *testing.T) {
	j := &CJSON{}
	j.Open()
	j.Num("n", "1")
	j.Key("empty")
	j.Open()
	j.Close()
	j.Key("o")
	j.Attrs([]Attr{{"a", "x\"y"}, {"R.walltime", "01:00:00"}, {"R.ncpus", "2"}, {"b", "007"}})
	j.Strs("l", []string{"p", "q"})
	j.Close()
	want := "{\n\t\"n\":\t1,\n\t\"empty\":\t{\n\t},\n\t\"o\":\t{\n\t\t\"a\":\t\"x\\\"y\",\n\t\t\"R\":\t{\n\t\t\t\"walltime\":\t\"01:00:00\",\n" +
		"\t\t\t\"ncpus\":\t2\n\t\t},\n\t\t\"b\":\t7\n\t},\n\t\"l\":\t[\"p\", \"q\"]\n}"
	if string(j.B) != want {
		t.Errorf("got\n%s\nwant\n%s", j.B, want)
	}
}

func TestAutoWidthOnlyWhereAllowed(t *testing.T) {
	f, bad := testTable.ParsePercent("%#.5n")
	if len(bad) != 1 || bad[0] != "#" || len(f) != 1 || f[0].Text != "%#.5n" {
		t.Errorf("without AllowAuto: %v %v", f, bad)
	}
	at := NewTable(testTable.Fields)
	at.AllowAuto = true
	f, bad = at.ParsePercent("%#.5n|")
	if len(bad) != 0 || len(f) != 1 || !f[0].Auto || !f[0].Col.Right || f[0].Col.Width != 5 || f[0].Suffix != "|" {
		t.Errorf("with AllowAuto: %+v %v", f, bad)
	}
}
