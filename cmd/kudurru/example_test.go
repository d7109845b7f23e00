package main

import (
	"reflect"
	"testing"

	"github.com/knadh/koanf/parsers/yaml"
	"github.com/knadh/koanf/providers/file"
	"github.com/knadh/koanf/v2"
)

// TestExampleConfig keeps deploy/kudurru.example.yaml honest: it loads and
// validates, and it lists every configuration key.
func TestExampleConfig(t *testing.T) {
	const path = "../../deploy/kudurru.example.yaml"
	cfg, err := loadConfig(DefaultConfig(), nil, path, nil, nil)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("validate: %v", err)
	}
	k := koanf.New(".")
	if err := k.Load(file.Provider(path), yaml.Parser()); err != nil {
		t.Fatal(err)
	}
	for key := range keysOf(reflect.TypeOf(Config{})) {
		if !k.Exists(key) {
			t.Errorf("the example configuration lacks %s", key)
		}
	}
}
