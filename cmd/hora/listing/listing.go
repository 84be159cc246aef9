// Package listing is the field/column engine that the query commands share
// (squeue, sacct, sinfo, qstat, qselect, pbsnodes): a table of named fields
// per kind of row, the %-format and name-list parsers that pick fields out of
// it, and the writers that lay the chosen fields out as fixed columns,
// `name = value` attribute blocks or JSON.
//
// A command owns its table (one line per field: letter, names, header,
// value); adding a field to a command is adding one line to its table.
// Everything here is free of I/O but the io.Writer it is handed, so golden
// tests drive it with fixed rows and a fixed clock.
package listing

import (
	"bufio"
	"io"
	"strings"
	"sync"
	"time"
)

// Column is the layout of one output field: its width and justification,
// as parsed from "%.18i" (right, 18), "%8j" (left, 8) or "%R" (natural).
type Column struct {
	Width int
	Right bool
	// Trunc cuts values longer than Width. squeue and sinfo truncate plain
	// text but never time columns and node lists (COMPAT.md §3.1).
	Trunc bool
	// Mark, when set, replaces the last kept byte of a cut value, so that
	// the cut shows (PBS's '*', sacct's '+').
	Mark byte
}

// AppendCol appends s laid out in the column. It works on bytes, as the C
// printf that Slurm and PBS use does, and allocates nothing.
func AppendCol(b []byte, s string, c Column) []byte {
	if c.Width <= 0 {
		return append(b, s...)
	}
	if c.Trunc && len(s) > c.Width {
		if c.Mark != 0 {
			b = append(b, s[:c.Width-1]...)
			return append(b, c.Mark)
		}
		s = s[:c.Width]
	}
	pad := c.Width - len(s)
	if c.Right {
		b = AppendSpaces(b, pad)
		return append(b, s...)
	}
	b = append(b, s...)
	return AppendSpaces(b, pad)
}

// AppendSpaces appends n blanks (none when n ≤ 0).
func AppendSpaces(b []byte, n int) []byte {
	for ; n > 0; n-- {
		b = append(b, ' ')
	}
	return b
}

// Ctx is what a value needs beside its row: the clock and the time format,
// and a memo of formatted durations (thousands of pending jobs all show
// 0:00, and formatting each was a tenth of squeue's work).
type Ctx struct {
	Now        time.Time
	NowUnix    int64
	TimeFormat string
	// FormatDuration formats the durations memoised by Duration.
	FormatDuration func(secs int64) string
	durs           map[int64]string
}

// NewCtx returns a context for rows printed at now.
func NewCtx(now time.Time, timeFormat string, formatDuration func(int64) string) *Ctx {
	return &Ctx{Now: now, NowUnix: now.Unix(), TimeFormat: timeFormat, FormatDuration: formatDuration}
}

// Duration formats secs with FormatDuration, remembering the text.
func (c *Ctx) Duration(secs int64) string {
	if s, ok := c.durs[secs]; ok {
		return s
	}
	s := c.FormatDuration(secs)
	if c.durs == nil {
		c.durs = map[int64]string{}
	}
	if len(c.durs) < 4096 {
		c.durs[secs] = s
	}
	return s
}

// Field is one field of rows of type R.
type Field[R any] struct {
	Letter byte     // its -o letter (%X); 0 when it has none
	Names  []string // its long names (-O, -F, attribute names); the first one is canonical
	Header string   // column header
	// Keep pads but never cuts the value (time columns, node lists: a cut
	// time or host name would mislead).
	Keep  bool
	Value func(c *Ctx, r *R) string
}

// Name is the canonical long name of the field.
func (f *Field[R]) Name() string {
	if len(f.Names) == 0 {
		return ""
	}
	return f.Names[0]
}

// Table is the set of fields of one kind of row, indexed by letter and by
// name (case-insensitive).
type Table[R any] struct {
	Fields []Field[R]
	// AllowAuto lets %-formats write "%#X": the column as wide as its
	// longest value (sinfo's '#', COMPAT.md §5.1); the writer sizes it.
	AllowAuto bool

	byLetter [256]int32 // index+1 into Fields; 0 = no field
	byName   map[string]int
}

// NewTable indexes fields. A letter or name given twice is a programming
// error and panics at start-up, so a table can never be ambiguous.
func NewTable[R any](fields []Field[R]) *Table[R] {
	t := &Table[R]{Fields: fields, byName: map[string]int{}}
	for i := range fields {
		f := &fields[i]
		if f.Letter != 0 {
			if t.byLetter[f.Letter] != 0 {
				panic("listing: letter " + string(f.Letter) + " given twice")
			}
			t.byLetter[f.Letter] = int32(i + 1)
		}
		for _, n := range f.Names {
			k := strings.ToLower(n)
			if _, dup := t.byName[k]; dup {
				panic("listing: name " + n + " given twice")
			}
			t.byName[k] = i
		}
	}
	return t
}

// ByLetter returns the field of a %-letter.
func (t *Table[R]) ByLetter(l byte) (*Field[R], bool) {
	if i := t.byLetter[l]; i != 0 {
		return &t.Fields[i-1], true
	}
	return nil, false
}

// ByName returns the field of a long name, matched case-insensitively.
func (t *Table[R]) ByName(name string) (*Field[R], bool) {
	if i, ok := t.byName[strings.ToLower(strings.TrimSpace(name))]; ok {
		return &t.Fields[i], true
	}
	return nil, false
}

// Item is one piece of an output line: a field in its column followed by a
// literal suffix, or (Field nil) literal text alone.
type Item[R any] struct {
	Field  *Field[R]
	Col    Column
	Suffix string // literal text printed after the field
	Text   string // the literal itself when Field is nil
	Auto   bool   // "%#X": as wide as the longest value (Table.AllowAuto)
}

// Format is an output line layout.
type Format[R any] []Item[R]

// ParsePercent parses a Slurm -o string ("%.18i %9P|%j"). Like Slurm, which
// tokenises on '%' with strtok, text before the first '%' is a literal
// prefix, text after the type letter is the field's suffix, and runs of '%'
// collapse ("%%i" is "%i", which ReFrame relies on). Unknown letters are
// returned so that the caller can complain; their whole token ("%-10i|") is
// printed as literal text, as Slurm prints it.
func (t *Table[R]) ParsePercent(f string) (items Format[R], bad []string) {
	toks := strings.Split(f, "%")
	if toks[0] != "" {
		items = append(items, Item[R]{Text: toks[0]})
	}
	for _, tok := range toks[1:] {
		if tok == "" {
			continue
		}
		var c Column
		i := 0
		auto := false
		if t.AllowAuto && tok[0] == '#' {
			auto = true
			i++
		}
		if i < len(tok) && tok[i] == '.' {
			c.Right = true
			i++
		}
		for i < len(tok) && tok[i] >= '0' && tok[i] <= '9' {
			c.Width = c.Width*10 + int(tok[i]-'0')
			i++
		}
		if i >= len(tok) {
			bad = append(bad, tok)
			continue
		}
		suffix := tok[i+1:]
		fld, ok := t.ByLetter(tok[i])
		if !ok {
			// Slurm's job_format_add_invalid: the whole token, its '%'
			// and width included, is printed as it was written.
			bad = append(bad, string(tok[i]))
			items = append(items, Item[R]{Text: "%" + tok})
			continue
		}
		c.Trunc = !fld.Keep
		items = append(items, Item[R]{Field: fld, Col: c, Suffix: suffix, Auto: auto})
	}
	return items, bad
}

// ParseNames parses a Slurm -O list: "name[:[.][size][suffix]]", comma
// separated, names case-insensitive, width defWidth left-justified unless
// given (COMPAT.md §3.4). Unknown names are returned.
func (t *Table[R]) ParseNames(f string, defWidth int) (items Format[R], bad []string) {
	for _, item := range strings.Split(f, ",") {
		if item == "" {
			continue
		}
		name, spec, hasSpec := strings.Cut(item, ":")
		fld, ok := t.ByName(name)
		if !ok {
			bad = append(bad, name)
			continue
		}
		c := Column{Width: defWidth}
		suffix := ""
		if hasSpec {
			i := 0
			if i < len(spec) && spec[i] == '.' {
				c.Right = true
				i++
			}
			if i < len(spec) && spec[i] >= '0' && spec[i] <= '9' {
				c.Width = 0
				for i < len(spec) && spec[i] >= '0' && spec[i] <= '9' {
					c.Width = c.Width*10 + int(spec[i]-'0')
					i++
				}
			}
			suffix = spec[i:]
		}
		c.Trunc = !fld.Keep
		items = append(items, Item[R]{Field: fld, Col: c, Suffix: suffix})
	}
	return items, bad
}

// AppendHeader appends the header line of the format.
func (f Format[R]) AppendHeader(b []byte) []byte {
	for i := range f {
		it := &f[i]
		if it.Field == nil {
			b = append(b, it.Text...)
			continue
		}
		// A header is cut to its width even where the values are kept
		// whole (squeue -l's "TIME_LIMI": Slurm's _print_str(title, ..., cut)).
		hc := it.Col
		hc.Trunc = hc.Width > 0
		b = AppendCol(b, it.Field.Header, hc)
		b = append(b, it.Suffix...)
	}
	return append(b, '\n')
}

// AppendRow appends one row's line.
func (f Format[R]) AppendRow(b []byte, c *Ctx, r *R) []byte {
	for i := range f {
		it := &f[i]
		if it.Field == nil {
			b = append(b, it.Text...)
			continue
		}
		b = AppendCol(b, it.Field.Value(c, r), it.Col)
		b = append(b, it.Suffix...)
	}
	return append(b, '\n')
}

// Write prints rows in the format, with the header line first when asked.
// It is the hot loop of a listing over a long queue: lines are built with
// append into one reused buffer and written through a bufio.Writer.
func (f Format[R]) Write(w io.Writer, rows []R, c *Ctx, header bool) error {
	return f.WriteEach(w, len(rows), func(i int) *R { return &rows[i] }, c, header)
}

// WritePtrs is Write over rows given by pointer (a sorted view of rows
// too large to move).
func (f Format[R]) WritePtrs(w io.Writer, rows []*R, c *Ctx, header bool) error {
	return f.WriteEach(w, len(rows), func(i int) *R { return rows[i] }, c, header)
}

// WriteEach is Write over n rows that row gives one at a time (a row may
// be decoded into the same R each time).
func (f Format[R]) WriteEach(w io.Writer, n int, row func(int) *R, c *Ctx, header bool) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	line := make([]byte, 0, 256)
	if header {
		line = f.AppendHeader(line)
		bw.Write(line)
	}
	for i := range n {
		line = f.AppendRow(line[:0], c, row(i))
		bw.Write(line)
	}
	return bw.Flush()
}

// Attr is one `name = value` pair of an attribute listing.
type Attr struct{ Name, Value string }

// AppendAttrs appends the named fields of r that have a value, in table
// order, as attribute pairs (qstat -f, pbsnodes, JSON objects). Fields
// without a name are skipped; an empty value means "not set" and is left out.
func (t *Table[R]) AppendAttrs(out []Attr, c *Ctx, r *R) []Attr {
	for i := range t.Fields {
		f := &t.Fields[i]
		if len(f.Names) == 0 {
			continue
		}
		if v := f.Value(c, r); v != "" {
			out = append(out, Attr{f.Names[0], v})
		}
	}
	return out
}

// Lazy is a table built on first use, so that a process which never shows
// these rows does not build it. Declared as
// `var t = listing.Lazy[R]{Build: func() *listing.Table[R] {...}}`, it is
// laid out by the compiler: sync.OnceValue would be a call at init in every
// client process.
type Lazy[R any] struct {
	Build func() *Table[R]
	once  sync.Once
	t     *Table[R]
}

// Get builds the table the first time and returns it.
func (l *Lazy[R]) Get() *Table[R] {
	l.once.Do(func() { l.t = l.Build() })
	return l.t
}
