package main

import (
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestConfigDocumented checks docs/CONFIG.md against the code: every key has
// a row naming its environment variable and flag, and outside dns (whose
// defaults docs/DNS.md gives) the row's default is DefaultConfig's.
func TestConfigDocumented(t *testing.T) {
	b, err := os.ReadFile("../../docs/CONFIG.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string][]string{}
	for _, line := range strings.Split(string(b), "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 4 {
			continue
		}
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if k := strings.Trim(cells[1], "`"); rows[k] == nil { // the first table that names a key documents it
			rows[k] = cells[2:]
		}
	}
	flagOf := map[string]string{}
	for f, k := range flagKeys {
		flagOf[k] = "--" + f
	}
	defaults := flatten(reflect.ValueOf(DefaultConfig()), "")
	for key := range keysOf(reflect.TypeOf(Config{})) {
		row, ok := rows[key]
		if !ok {
			t.Errorf("docs/CONFIG.md has no row for %s", key)
			continue
		}
		text := strings.Join(row, "|")
		// KUDURRU_<SECTION>_<KEY>, "__" for each level deeper (load.go).
		section, rest, _ := strings.Cut(key, ".")
		env := "KUDURRU_" + strings.ToUpper(section+"_"+strings.ReplaceAll(rest, ".", "__"))
		if !strings.Contains(text, "`"+env+"`") {
			t.Errorf("%s: row lacks the variable %s", key, env)
		}
		if f := flagOf[key]; f != "" && !strings.Contains(text, "`"+f+"`") {
			t.Errorf("%s: row lacks the flag %s", key, f)
		}
		if strings.HasPrefix(key, "dns.") {
			continue
		}
		if want := "`" + defaults[key] + "`"; !strings.HasPrefix(row[0], want) {
			t.Errorf("%s: documented default %s, DefaultConfig has %s", key, row[0], want)
		}
	}
}

// flatten returns the values of a config struct by key, formatted as the
// docs write them.
func flatten(v reflect.Value, prefix string) map[string]string {
	out := map[string]string{}
	for i := range v.NumField() {
		f := v.Type().Field(i)
		tag := strings.Split(f.Tag.Get("koanf"), ",")[0]
		if tag == "" {
			continue
		}
		fv := v.Field(i)
		switch x := fv.Interface().(type) {
		case time.Duration:
			s := x.String()
			if strings.HasSuffix(s, "m0s") {
				s = strings.TrimSuffix(s, "0s")
			}
			out[prefix+tag] = s
		case string:
			out[prefix+tag] = x
			if x == "" {
				out[prefix+tag] = `""`
			}
		case []string:
			out[prefix+tag] = fmt.Sprintf("%q", x)
			if len(x) == 0 {
				out[prefix+tag] = "[]"
			}
		default:
			if fv.Kind() == reflect.Struct {
				for k, s := range flatten(fv, prefix+tag+".") {
					out[k] = s
				}
				continue
			}
			out[prefix+tag] = fmt.Sprint(x)
		}
	}
	return out
}
