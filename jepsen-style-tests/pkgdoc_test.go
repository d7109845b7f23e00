package jepsen

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPackageDocs checks that every package of the suite has a doc
// comment.
func TestPackageDocs(t *testing.T) {
	dirs := []string{"."}
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") && e.Name() != "out" && e.Name() != "testdata" {
			dirs = append(dirs, e.Name())
		}
	}
	for _, dir := range dirs {
		pkgs, err := parser.ParseDir(token.NewFileSet(), dir, func(fi os.FileInfo) bool {
			return !strings.HasSuffix(fi.Name(), "_test.go")
		}, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		for name, p := range pkgs {
			documented := false
			for _, f := range p.Files {
				documented = documented || f.Doc != nil
			}
			if !documented {
				t.Errorf("package %s in %s has no doc comment", name, filepath.Clean(dir))
			}
		}
	}
}
