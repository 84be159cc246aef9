package api

import (
	"bytes"
	"encoding/gob"
	"encoding/json"
	"reflect"
	"testing"
)

// fill sets every field reachable from v to a non-zero value, so that an
// encoding that drops a field shows up as a difference.
func fill(v reflect.Value, seed *int) {
	*seed++
	switch v.Kind() {
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			fill(v.Field(i), seed)
		}
	case reflect.String:
		v.SetString("s" + string(rune('a'+*seed%26)))
	case reflect.Int, reflect.Int64, reflect.Int32:
		v.SetInt(int64(*seed))
	case reflect.Uint32, reflect.Uint64, reflect.Uint:
		v.SetUint(uint64(*seed))
	case reflect.Float64:
		v.SetFloat(float64(*seed) + 0.5)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fill(p.Elem(), seed)
		v.Set(p)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 2, 2)
		for i := 0; i < 2; i++ {
			fill(s.Index(i), seed)
		}
		v.Set(s)
	}
}

// Job listings travel as gob to the Go client and as JSON to everyone else:
// both must carry every field of api.Job unchanged.
func TestListingEncodingsKeepEveryField(t *testing.T) {
	var in JobsResponse
	in.Jobs = make([]Job, 3)
	seed := 0
	for i := range in.Jobs {
		fill(reflect.ValueOf(&in.Jobs[i]).Elem(), &seed)
	}
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(&in); err != nil {
		t.Fatal(err)
	}
	var viaGob JobsResponse
	if err := gob.NewDecoder(&buf).Decode(&viaGob); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, viaGob) {
		t.Fatalf("gob changed the listing:\n%+v\n%+v", in.Jobs[0], viaGob.Jobs[0])
	}
	b, _ := json.Marshal(&in)
	var viaJSON JobsResponse
	if err := json.Unmarshal(b, &viaJSON); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, viaJSON) {
		t.Fatalf("JSON changed the listing:\n%+v\n%+v", in.Jobs[0], viaJSON.Jobs[0])
	}
}
