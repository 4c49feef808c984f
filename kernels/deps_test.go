package kernels

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLeanDeps: a program that copies data links neither the generator's
// writer (jennifer) nor the Go toolchain's packages (go/ast, go/format, …):
// those run at go generate time only; nor text/template's executor, whose
// calls of methods by name keep every exported method of every linked type
// in the binary (gen renders the templates with an executor of its own).
func TestLeanDeps(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go toolchain here (the GPU machine): the check needs go list")
	}
	for _, pkg := range []string{"github.com/stridekit/stridekit/kernels", "github.com/stridekit/stridekit/runtime/memview"} {
		out, err := exec.Command(goTool, "list", "-deps", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			if strings.HasPrefix(dep, "go/") || strings.Contains(dep, "jennifer") || strings.HasSuffix(dep, "/gen/writer") || dep == "text/template" {
				t.Errorf("%s links %s", pkg, dep)
			}
		}
	}
}
