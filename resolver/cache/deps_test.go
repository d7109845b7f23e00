package cache

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestDeps keeps the cache free of the control plane: DESIGN.md says
// resolver never imports cluster, fsm, hashicorp/raft or memberlist.
func TestDeps(t *testing.T) {
	checkDeps(t, ".")
}

func checkDeps(t *testing.T, pkg string) {
	t.Helper()
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	out, err := exec.Command(goBin, "list", "-deps", "-f", "{{.ImportPath}}", pkg).CombinedOutput()
	if err != nil {
		t.Skipf("go list: %v\n%s", err, out)
	}
	denied := []string{
		"github.com/kudurru/kudurru/cluster",
		"github.com/kudurru/kudurru/fsm",
		"github.com/hashicorp/raft",
		"github.com/hashicorp/memberlist",
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, d := range denied {
			if dep == d || strings.HasPrefix(dep, d+"/") {
				t.Errorf("imports %s (denied: %s)", dep, d)
			}
		}
	}
}
