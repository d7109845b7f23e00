package resolver_test

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// goTool returns the go command of the toolchain running the tests.
func goTool(t *testing.T) string {
	t.Helper()
	p := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := exec.LookPath(p); err == nil {
		return p
	}
	p, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not found")
	}
	return p
}

// TestDependencies enforces the boundary of DESIGN.md: the data plane
// reads zone data through fsm/zone and talks to the cluster only through
// its own interfaces, so it never imports the cluster, Raft, memberlist or
// the rest of fsm, not even in tests.
func TestDependencies(t *testing.T) {
	out, err := exec.Command(goTool(t), "list", "-deps", "-test", "github.com/kudurru/kudurru/resolver/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		dep = strings.TrimSuffix(strings.Fields(dep + " ")[0], ".test")
		switch {
		case dep == "github.com/kudurru/kudurru/cluster" || strings.HasPrefix(dep, "github.com/kudurru/kudurru/cluster/"),
			dep == "github.com/kudurru/kudurru/fsm",
			strings.HasPrefix(dep, "github.com/kudurru/kudurru/fsm/") && dep != "github.com/kudurru/kudurru/fsm/zone",
			strings.HasPrefix(dep, "github.com/hashicorp/raft"),
			strings.HasPrefix(dep, "github.com/hashicorp/memberlist"):
			t.Errorf("resolver/... depends on %s", dep)
		}
	}
}

// TestPackageDocs requires a package doc comment on every package under
// resolver/.
func TestPackageDocs(t *testing.T) {
	out, err := exec.Command(goTool(t), "list", "-f", "{{.ImportPath}}\t{{.Doc}}", "github.com/kudurru/kudurru/resolver/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		path, doc, _ := strings.Cut(line, "\t")
		if strings.TrimSpace(doc) == "" {
			t.Errorf("package %s has no doc comment", path)
		}
	}
}
