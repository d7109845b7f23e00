package main

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-viper/mapstructure/v2"
	"github.com/knadh/koanf/parsers/yaml"
	"github.com/knadh/koanf/providers/confmap"
	"github.com/knadh/koanf/providers/env/v2"
	"github.com/knadh/koanf/providers/file"
	"github.com/knadh/koanf/providers/posflag"
	"github.com/knadh/koanf/v2"
	"github.com/spf13/pflag"
)

// envPrefix starts every configuration environment variable.
const envPrefix = "KUDURRU_"

// flagKeys maps the serve flags that set configuration keys to those keys.
var flagKeys = map[string]string{
	"node-id":        "node.id",
	"data-dir":       "node.data_dir",
	"api-addr":       "api.addr",
	"api-advertise":  "api.advertise",
	"token":          "api.token",
	"raft-addr":      "raft.addr",
	"raft-advertise": "raft.advertise",
	"bootstrap":      "raft.bootstrap",
	"join":           "raft.join",
	"dns-addr":       "dns.addr",
	"log-level":      "log.level",
	"log-format":     "log.format",
}

// source is one layer of configuration.
type source struct {
	name string // for messages: "config file x.yaml", "environment", "flags"
	p    koanf.Provider
	pa   koanf.Parser
	// origin names where a key came from, for messages ("KUDURRU_API_TOKN").
	origin func(key string) string
}

// loadConfig builds the configuration from its layers, lowest first:
// defaults, the dev preset (dev only), the YAML file at path (when not
// empty), KUDURRU_* environment variables from environ, and the flags set
// on fs. Every layer is checked on its own, so an unknown key or a bad
// value is reported with the layer and the key it came from.
func loadConfig(defaults Config, dev map[string]any, path string, environ []string, fs *pflag.FlagSet) (Config, error) {
	var layers []source
	if dev != nil {
		layers = append(layers, source{name: "the --dev preset", p: confmap.Provider(dev, ".")})
	}
	if path != "" {
		layers = append(layers, source{name: "config file " + path, p: file.Provider(path), pa: yaml.Parser()})
	}
	layers = append(layers, envSource(environ))
	if fs != nil {
		layers = append(layers, flagSource(fs))
	}
	known := keysOf(reflect.TypeOf(defaults))
	merged := koanf.New(".")
	for _, l := range layers {
		k := koanf.New(".")
		if err := k.Load(l.p, l.pa); err != nil {
			return Config{}, fmt.Errorf("read %s: %w", l.name, err)
		}
		if err := checkLayer(k, known, defaults, l); err != nil {
			return Config{}, err
		}
		if err := merged.Merge(k); err != nil {
			return Config{}, fmt.Errorf("merge %s: %w", l.name, err)
		}
	}
	cfg := defaults
	if err := decode(merged, &cfg); err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	return cfg, nil
}

// checkLayer refuses unknown keys and values of the wrong type in one layer.
func checkLayer(k *koanf.Koanf, known map[string]bool, defaults Config, l source) error {
	where := func(key string) string {
		if l.origin != nil {
			return l.origin(key)
		}
		return l.name
	}
	var unknown []string
	for _, key := range k.Keys() {
		if !known[key] && !isSection(known, key) {
			unknown = append(unknown, fmt.Sprintf("%q (%s)", key, where(key)))
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return fmt.Errorf("unknown config key %s; docs/CONFIG.md lists the keys", strings.Join(unknown, ", "))
	}
	scratch := defaults
	if l.origin != nil {
		return decodeFrom(k, &scratch, l.origin) // each key names its variable or flag
	}
	if err := decodeFrom(k, &scratch, nil); err != nil {
		return fmt.Errorf("%s: %w", l.name, err)
	}
	return nil
}

// isSection reports whether key is a section (a prefix of known keys).
func isSection(known map[string]bool, key string) bool {
	for k := range known {
		if strings.HasPrefix(k, key+".") {
			return true
		}
	}
	return false
}

// decode unmarshals k into out strictly: unknown keys are errors, types
// are not guessed, and durations need a unit.
func decode(k *koanf.Koanf, out *Config) error { return decodeFrom(k, out, nil) }

// decodeFrom is decode; where, when not nil, names the origin of a key in
// errors.
func decodeFrom(k *koanf.Koanf, out *Config, where func(key string) string) error {
	err := k.UnmarshalWithConf("", out, koanf.UnmarshalConf{
		Tag: "koanf",
		DecoderConfig: &mapstructure.DecoderConfig{
			DecodeHook: mapstructure.ComposeDecodeHookFunc(
				durationHook,
				mapstructure.StringToSliceHookFunc(","),
				mapstructure.StringToBasicTypeHookFunc(),
			),
			ErrorUnused:      true,
			WeaklyTypedInput: false,
			Result:           out,
			TagName:          "koanf",
		},
	})
	return keyedError(err, where)
}

// durationHook parses "5s" into a time.Duration and refuses a bare number,
// which would silently mean nanoseconds.
func durationHook(from, to reflect.Type, data any) (any, error) {
	if to != reflect.TypeOf(time.Duration(0)) {
		return data, nil
	}
	switch v := data.(type) {
	case string:
		d, err := time.ParseDuration(v)
		if err != nil {
			return nil, fmt.Errorf("%q is not a duration; write it with a unit, like 500ms, 5s or 2m", v)
		}
		return d, nil
	case time.Duration:
		return v, nil
	}
	return nil, fmt.Errorf("%v is not a duration; write it with a unit, like 500ms, 5s or 2m", data)
}

// keyedError rewrites mapstructure's errors as "key KEY (ORIGIN): problem".
func keyedError(err error, where func(string) string) error {
	if err == nil {
		return nil
	}
	var lines []string
	var walk func(error)
	walk = func(e error) {
		var de *mapstructure.DecodeError
		if errors.As(e, &de) && de.Name() != "" {
			key := "key " + de.Name()
			if where != nil {
				key += " (" + where(de.Name()) + ")"
			}
			lines = append(lines, key+": "+valueProblem(de))
			return
		}
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			for _, c := range j.Unwrap() {
				walk(c)
			}
			return
		}
		lines = append(lines, e.Error())
	}
	walk(err)
	return errors.New(strings.Join(lines, "; "))
}

// valueProblem says what is wrong with a value, in words rather than
// strconv's.
func valueProblem(de *mapstructure.DecodeError) string {
	var ne *strconv.NumError
	if errors.As(de, &ne) {
		want := map[string]string{
			"ParseBool": "true or false", "ParseInt": "an integer", "ParseUint": "a non-negative integer",
			"ParseFloat": "a number",
		}[ne.Func]
		if want == "" {
			want = "a valid value"
		}
		return fmt.Sprintf("%q is not %s", ne.Num, want)
	}
	return strings.TrimPrefix(de.Unwrap().Error(), fmt.Sprintf("error decoding '%s': ", de.Name()))
}

// keysOf returns the configuration keys of a struct type: its koanf tags,
// joined with "." through nested structs.
func keysOf(t reflect.Type) map[string]bool {
	out := map[string]bool{}
	var walk func(reflect.Type, string)
	walk = func(t reflect.Type, prefix string) {
		for i := range t.NumField() {
			f := t.Field(i)
			tag := strings.Split(f.Tag.Get("koanf"), ",")[0]
			if tag == "" || tag == "-" {
				continue
			}
			if f.Type.Kind() == reflect.Struct && f.Type != reflect.TypeOf(time.Duration(0)) {
				walk(f.Type, prefix+tag+".")
				continue
			}
			out[prefix+tag] = true
		}
	}
	walk(t, "")
	return out
}

// envSource reads KUDURRU_<SECTION>_<KEY> variables: KUDURRU_NODE_ID is
// node.id, KUDURRU_API_MAX_BODY_BYTES is api.max_body_bytes. A double
// underscore goes one level deeper. Variables whose first word is not a
// section (KUDURRU_API and KUDURRU_TOKEN of the CLI, say) are not
// configuration and are ignored.
func envSource(environ []string) source {
	sections := map[string]bool{}
	for key := range keysOf(reflect.TypeOf(Config{})) {
		s, _, _ := strings.Cut(key, ".")
		sections[s] = true
	}
	names := map[string]string{} // key -> variable
	p := env.Provider(".", env.Opt{
		Prefix:      envPrefix,
		EnvironFunc: func() []string { return environ },
		TransformFunc: func(name, value string) (string, any) {
			rest := strings.ToLower(strings.TrimPrefix(name, envPrefix))
			section, key, ok := strings.Cut(rest, "_")
			if !ok || !sections[section] || key == "" {
				return "", nil
			}
			k := section + "." + strings.ReplaceAll(key, "__", ".")
			names[k] = name
			return k, value
		},
	})
	return source{name: "the environment", p: p, origin: func(key string) string {
		return "environment variable " + names[key]
	}}
}

// flagSource reads the serve flags that were set on the command line.
func flagSource(fs *pflag.FlagSet) source {
	names := map[string]string{}
	p := posflag.ProviderWithFlag(fs, ".", nil, func(f *pflag.Flag) (string, any) {
		key, ok := flagKeys[f.Name]
		if !ok || !f.Changed {
			return "", nil
		}
		names[key] = "--" + f.Name
		return key, posflag.FlagVal(fs, f)
	})
	return source{name: "the command line", p: p, origin: func(key string) string { return "flag " + names[key] }}
}
