package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestEveryPackageHasDoc enforces a package doc comment on every package of
// the module (STYLE: "Every package has a doc comment, enforced by a test").
func TestEveryPackageHasDoc(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}\t{{.Doc}}", "github.com/kudurru/kudurru/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		path, doc, _ := strings.Cut(line, "\t")
		n++
		if strings.TrimSpace(doc) == "" {
			t.Errorf("package %s has no doc comment", path)
		}
	}
	if n < 10 {
		t.Fatalf("go list found only %d packages", n)
	}
}
