package config

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

var update = flag.Bool("update", false, "rewrite man/hora.toml.5")

// TestKeysDocumented: every key the decoder accepts has a KeyDoc, and every
// KeyDoc names a key that exists.
func TestKeysDocumented(t *testing.T) {
	valid := validKeys(reflect.TypeOf(Config{}), "")
	documented := map[string]bool{}
	for _, k := range Keys {
		if documented[k.Key] {
			t.Errorf("%s documented twice", k.Key)
		}
		documented[k.Key] = true
		if !valid[k.Key] {
			t.Errorf("Keys documents %s, which hora.toml does not accept", k.Key)
		}
		if strings.TrimSpace(k.Desc) == "" || k.Type == "" {
			t.Errorf("%s: no description or type", k.Key)
		}
	}
	for k := range valid {
		if !documented[k] {
			t.Errorf("key %s has no entry in config.Keys (doc.go): hora.toml(5) would not list it", k)
		}
	}
}

// field finds the value a dotted key decoded into: node.* in the first
// [[node]], partition.* in the first [[partition]].
func field(c *Config, key string) (reflect.Value, bool) {
	v := reflect.ValueOf(c).Elem()
	for _, part := range strings.Split(key, ".") {
		if v.Kind() == reflect.Slice {
			if v.Len() == 0 {
				return reflect.Value{}, false
			}
			v = v.Index(0)
		}
		found := false
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).Tag.Get("toml") == part {
				v, found = v.Field(i), true
				break
			}
		}
		if !found {
			return reflect.Value{}, false
		}
	}
	if v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	return v, true
}

// TestStatedDefaults: the Default each KeyDoc states is the value the code
// fills in when the key is absent from the file.
func TestStatedDefaults(t *testing.T) {
	c, err := Parse([]byte("[[node]]\nname = \"n1\"\n[[partition]]\nname = \"p\"\nnodes = \"n1\"\n"), "min.toml")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, k := range Keys {
		if k.Default == "" {
			continue
		}
		got, ok := field(c, k.Key)
		if !ok {
			t.Errorf("%s: no such field", k.Key)
			continue
		}
		want := reflect.New(got.Type())
		holder := reflect.New(reflect.StructOf([]reflect.StructField{{Name: "V", Type: got.Type(), Tag: `toml:"v"`}}))
		if _, err := toml.Decode("v = "+k.Default, holder.Interface()); err != nil {
			t.Errorf("%s: stated default %s is not a TOML %s: %v", k.Key, k.Default, got.Type(), err)
			continue
		}
		want.Elem().Set(holder.Elem().Field(0))
		if got.Kind() == reflect.Slice && got.Len() == 0 && want.Elem().Len() == 0 {
			checked++
			continue
		}
		if !reflect.DeepEqual(got.Interface(), want.Elem().Interface()) {
			t.Errorf("%s: hora.toml(5) states default %s, the code fills %#v", k.Key, k.Default, got.Interface())
		}
		checked++
	}
	if checked < 20 {
		t.Errorf("only %d defaults checked", checked)
	}
}

// TestManPage: man/hora.toml.5 is what ManPage renders (-update rewrites
// it) and mandoc finds nothing to complain about.
func TestManPage(t *testing.T) {
	path := filepath.Join("..", "man", "hora.toml.5")
	got := ManPage()
	for _, k := range Keys {
		if isTable(k) || strings.HasSuffix(k.Key, ".*") {
			continue
		}
		name := k.Key[strings.LastIndex(k.Key, ".")+1:]
		if !bytes.Contains(got, []byte(`\fB`+Roff(name)+`\fP`)) {
			t.Errorf("hora.toml(5) does not list %s", k.Key)
		}
	}
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	old, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(old, got) {
		t.Errorf("%s is not up to date: run make man-server (go test ./config -run TestManPage -update)", path)
	}
	lintMan(t, path)
}

// lintMan runs mandoc -Tlint -Werror on a page (scripts/deps.sh installs mandoc).
func lintMan(t *testing.T, path string) {
	t.Helper()
	if _, err := exec.LookPath("mandoc"); err != nil {
		t.Fatal("mandoc is missing (scripts/deps.sh installs it)")
	}
	if out, err := exec.Command("mandoc", "-Tlint", "-Werror", path).CombinedOutput(); err != nil || len(out) > 0 {
		t.Errorf("mandoc -Tlint -Werror %s: %v\n%s", path, err, out)
	}
}
