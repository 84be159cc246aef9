package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"reflect"
	"sync"

	"hora/api"
)

// The jobs.rec column (migration 9) holds a job's whole row — everything
// but its steps, which stay in job_steps — in one compact binary record,
// written by putJob in the same statement as the columns, so it always
// equals them, but for the spec, which is in the record only (putJob).
// Reading a job is then one column and one decode instead of 29 columns
// through database/sql and three JSON documents (about 14 µs of CPU per
// row, 87 % of recovery with 100,000 active jobs; docs/benchmarks.md).
// A row written before migration 9 has rec NULL and is read from its
// columns as before.
//
// The format is self-describing by field name, like JSON but binary, so a
// field added to api.Job or api.JobSpec later is stored without touching
// this file, a removed one is skipped when read, and reordering fields
// changes nothing:
//
//	record := version(=1) struct
//	struct := uvarint(n) n × (string(field name) value)   -- non-zero fields only
//	value  := tag payload
//	  tagInt    zigzag varint         tagUint  uvarint
//	  tagBool   (true; false is zero and not written)
//	  tagFloat  8 bytes, IEEE 754 little endian
//	  tagString uvarint(len) bytes
//	  tagSlice  uvarint(n) n × value
//	  tagStruct struct                tagPtr   struct (a nil pointer is zero)
//
// Field names are the JSON names (api's wire contract, the least likely to
// be renamed). A value whose tag does not fit its field's type is an error,
// never a silent zero.
const recordVersion = 1

const (
	tagInt byte = iota + 1
	tagUint
	tagBool
	tagFloat
	tagString
	tagSlice
	tagStruct
	tagPtr
)

// recCodec is how one Go type is written; built once per type by reflection.
type recCodec struct {
	tag    byte
	elem   *recCodec // tagSlice: the element's; tagPtr: the struct's
	fields []recField
	byName map[string]int // field name → index in fields
}

type recField struct {
	name  string
	index int
	c     *recCodec
}

var (
	codecsMu sync.Mutex
	codecs   = map[reflect.Type]*recCodec{}
	jobCodec = codecFor(reflect.TypeFor[api.Job]())
)

func codecFor(t reflect.Type) *recCodec {
	codecsMu.Lock()
	defer codecsMu.Unlock()
	return buildCodec(t)
}

func buildCodec(t reflect.Type) *recCodec {
	if c, ok := codecs[t]; ok {
		return c
	}
	c := &recCodec{}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		c.tag = tagInt
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		c.tag = tagUint
	case reflect.Bool:
		c.tag = tagBool
	case reflect.Float32, reflect.Float64:
		c.tag = tagFloat
	case reflect.String:
		c.tag = tagString
	case reflect.Slice:
		c.tag = tagSlice
		c.elem = buildCodec(t.Elem())
	case reflect.Pointer:
		if t.Elem().Kind() != reflect.Struct {
			panic(fmt.Sprintf("store record: unsupported type %v", t))
		}
		c.tag = tagPtr
		c.elem = buildCodec(t.Elem())
	case reflect.Struct:
		c.tag = tagStruct
		codecs[t] = c // before the fields: a type may not contain itself, but be safe
		c.byName = map[string]int{}
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name := jsonName(f)
			c.byName[name] = len(c.fields)
			c.fields = append(c.fields, recField{name: name, index: i, c: buildCodec(f.Type)})
		}
	default:
		// A map or interface in api.Job would need an order or a type
		// stream; the record refuses it at start rather than lose it.
		panic(fmt.Sprintf("store record: unsupported type %v", t))
	}
	codecs[t] = c
	return c
}

// jsonName is a field's JSON name, or its Go name when it has none.
func jsonName(f reflect.StructField) string {
	tag := f.Tag.Get("json")
	for i := 0; i < len(tag); i++ {
		if tag[i] == ',' {
			tag = tag[:i]
			break
		}
	}
	if tag == "" || tag == "-" {
		return f.Name
	}
	return tag
}

// recordOf is what the record keeps of j: the row. Steps live in
// job_steps; the other fields cleared are set by horad when it presents a
// job and were never columns.
func recordOf(j *api.Job) api.Job {
	r := *j
	r.Steps = nil
	r.ExpectedStart = 0
	r.ArrayThrottle = 0
	r.ArrayPending = nil
	r.Dependency = ""
	return r
}

// encodeRecord appends j's record (recordOf) to buf.
func encodeRecord(buf []byte, j *api.Job) []byte {
	r := recordOf(j)
	buf = append(buf, recordVersion)
	return appendStruct(buf, reflect.ValueOf(&r).Elem(), jobCodec)
}

func appendStruct(buf []byte, v reflect.Value, c *recCodec) []byte {
	n := 0
	for _, f := range c.fields {
		if !zero(v.Field(f.index)) {
			n++
		}
	}
	buf = binary.AppendUvarint(buf, uint64(n))
	for _, f := range c.fields {
		fv := v.Field(f.index)
		if zero(fv) {
			continue
		}
		buf = appendString(buf, f.name)
		buf = appendValue(buf, fv, f.c)
	}
	return buf
}

// zero reports whether a field is left out of the record: its zero value,
// or an empty slice, which is read back as nil (canonical does the same
// for the columns; no reader tells an empty slice from nil).
func zero(v reflect.Value) bool {
	if v.Kind() == reflect.Slice {
		return v.Len() == 0
	}
	return v.IsZero()
}

func appendString(buf []byte, s string) []byte {
	buf = binary.AppendUvarint(buf, uint64(len(s)))
	return append(buf, s...)
}

func appendValue(buf []byte, v reflect.Value, c *recCodec) []byte {
	buf = append(buf, c.tag)
	switch c.tag {
	case tagInt:
		return binary.AppendVarint(buf, v.Int())
	case tagUint:
		return binary.AppendUvarint(buf, v.Uint())
	case tagBool:
		return buf // only true is written
	case tagFloat:
		return binary.LittleEndian.AppendUint64(buf, math.Float64bits(v.Float()))
	case tagString:
		return appendString(buf, v.String())
	case tagSlice:
		buf = binary.AppendUvarint(buf, uint64(v.Len()))
		for i := range v.Len() {
			buf = appendValue(buf, v.Index(i), c.elem)
		}
		return buf
	case tagPtr:
		return appendStruct(buf, v.Elem(), c.elem)
	default: // tagStruct
		return appendStruct(buf, v, c)
	}
}

var errRecord = errors.New("malformed job record")

// recDecoder reads a record held in a string: every string of the job
// shares that one allocation.
type recDecoder struct {
	s   string
	off int
}

// decodeRecord fills j (which must be zero) from a record.
func decodeRecord(rec string, j *api.Job) error {
	if len(rec) == 0 || rec[0] != recordVersion {
		return fmt.Errorf("%w: version", errRecord)
	}
	d := recDecoder{s: rec, off: 1}
	if err := d.structInto(reflect.ValueOf(j).Elem(), jobCodec); err != nil {
		return err
	}
	if d.off != len(d.s) {
		return fmt.Errorf("%w: %d bytes left over", errRecord, len(d.s)-d.off)
	}
	return nil
}

func (d *recDecoder) uvarint() (uint64, error) {
	var x uint64
	var shift uint
	for i := 0; i < binary.MaxVarintLen64; i++ {
		if d.off >= len(d.s) {
			return 0, fmt.Errorf("%w: truncated", errRecord)
		}
		b := d.s[d.off]
		d.off++
		if b < 0x80 {
			return x | uint64(b)<<shift, nil
		}
		x |= uint64(b&0x7f) << shift
		shift += 7
	}
	return 0, fmt.Errorf("%w: varint overflow", errRecord)
}

func (d *recDecoder) varint() (int64, error) {
	u, err := d.uvarint()
	x := int64(u >> 1)
	if u&1 != 0 {
		x = ^x
	}
	return x, err
}

func (d *recDecoder) str() (string, error) {
	n, err := d.uvarint()
	if err != nil {
		return "", err
	}
	if n > uint64(len(d.s)-d.off) {
		return "", fmt.Errorf("%w: truncated string", errRecord)
	}
	s := d.s[d.off : d.off+int(n)]
	d.off += int(n)
	return s, nil
}

func (d *recDecoder) structInto(v reflect.Value, c *recCodec) error {
	n, err := d.uvarint()
	if err != nil {
		return err
	}
	for range n {
		name, err := d.str()
		if err != nil {
			return err
		}
		i, ok := c.byName[name]
		if !ok {
			// A field this program no longer has: skip its value.
			if err := d.skip(); err != nil {
				return err
			}
			continue
		}
		f := &c.fields[i]
		if err := d.value(v.Field(f.index), f.c, name); err != nil {
			return err
		}
	}
	return nil
}

func (d *recDecoder) value(v reflect.Value, c *recCodec, name string) error {
	if d.off >= len(d.s) {
		return fmt.Errorf("%w: truncated", errRecord)
	}
	tag := d.s[d.off]
	d.off++
	if tag != c.tag {
		return fmt.Errorf("%w: field %s: tag %d, want %d", errRecord, name, tag, c.tag)
	}
	switch tag {
	case tagInt:
		x, err := d.varint()
		if err != nil {
			return err
		}
		if v.OverflowInt(x) {
			return fmt.Errorf("%w: field %s: %d overflows %v", errRecord, name, x, v.Type())
		}
		v.SetInt(x)
	case tagUint:
		x, err := d.uvarint()
		if err != nil {
			return err
		}
		if v.OverflowUint(x) {
			return fmt.Errorf("%w: field %s: %d overflows %v", errRecord, name, x, v.Type())
		}
		v.SetUint(x)
	case tagBool:
		v.SetBool(true)
	case tagFloat:
		if len(d.s)-d.off < 8 {
			return fmt.Errorf("%w: truncated", errRecord)
		}
		v.SetFloat(math.Float64frombits(binary.LittleEndian.Uint64([]byte(d.s[d.off : d.off+8]))))
		d.off += 8
	case tagString:
		s, err := d.str()
		if err != nil {
			return err
		}
		v.SetString(s)
	case tagSlice:
		n, err := d.uvarint()
		if err != nil {
			return err
		}
		if n > uint64(len(d.s)-d.off) { // every element takes at least its tag
			return fmt.Errorf("%w: field %s: %d elements", errRecord, name, n)
		}
		if v.Type().Elem().Kind() == reflect.String {
			// The common case (nodes, env, args) without reflection per element.
			ss := make([]string, n)
			for i := range ss {
				if d.off >= len(d.s) || d.s[d.off] != tagString {
					return fmt.Errorf("%w: field %s: element is not a string", errRecord, name)
				}
				d.off++
				if ss[i], err = d.str(); err != nil {
					return err
				}
			}
			if v.Type() == reflect.TypeFor[[]string]() {
				v.Set(reflect.ValueOf(ss))
				return nil
			}
			sv := reflect.MakeSlice(v.Type(), int(n), int(n))
			for i, s := range ss {
				sv.Index(i).SetString(s)
			}
			v.Set(sv)
			return nil
		}
		sv := reflect.MakeSlice(v.Type(), int(n), int(n))
		for i := range int(n) {
			if err := d.value(sv.Index(i), c.elem, name); err != nil {
				return err
			}
		}
		v.Set(sv)
	case tagPtr:
		p := reflect.New(v.Type().Elem())
		if err := d.structInto(p.Elem(), c.elem); err != nil {
			return err
		}
		v.Set(p)
	case tagStruct:
		return d.structInto(v, c)
	default:
		return fmt.Errorf("%w: field %s: unknown tag %d", errRecord, name, tag)
	}
	return nil
}

// skip passes over one value of a field this program does not know.
func (d *recDecoder) skip() error {
	if d.off >= len(d.s) {
		return fmt.Errorf("%w: truncated", errRecord)
	}
	tag := d.s[d.off]
	d.off++
	switch tag {
	case tagInt, tagUint:
		_, err := d.uvarint()
		return err
	case tagBool:
		return nil
	case tagFloat:
		if len(d.s)-d.off < 8 {
			return fmt.Errorf("%w: truncated", errRecord)
		}
		d.off += 8
		return nil
	case tagString:
		_, err := d.str()
		return err
	case tagSlice:
		n, err := d.uvarint()
		if err != nil {
			return err
		}
		for range n {
			if err := d.skip(); err != nil {
				return err
			}
		}
		return nil
	case tagStruct, tagPtr:
		n, err := d.uvarint()
		if err != nil {
			return err
		}
		for range n {
			if _, err := d.str(); err != nil {
				return err
			}
			if err := d.skip(); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("%w: unknown tag %d", errRecord, tag)
}
