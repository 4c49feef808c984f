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

// layers lists the module's library packages from the bottom up: a package
// may import packages of lower layers only (docs/design.md, "Packages and
// layers"). Commands, the generator's writer and the internal helpers not
// listed here sit above all of them; internal/tilegeom, which the planner
// and the generator share, sits below them all.
var layers = [][]string{
	{"internal/tilegeom", "internal/meminfo", "internal/dlib"},
	{"layout", "templates"},
	{"gen"},
	{"runtime/cuda", "runtime/hostcopy"},
	{"kernels/jit"},
	{"kernels"},
	{"runtime/dlpack"},
	{"runtime/memview"},
	{"runtime/dist"},
	{"runtime/nccl"},
}

// TestLayering: every library package (and internal package listed in a
// layer) imports only packages of lower layers, and every library package
// is in a layer.
func TestLayering(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go toolchain here (the GPU machine): the check needs go list")
	}
	const mod = "github.com/stridekit/stridekit/"
	out, err := exec.Command(goTool, "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", mod+"...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	level := map[string]int{}
	for i, l := range layers {
		for _, p := range l {
			level[p] = i
		}
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		pkg := strings.TrimPrefix(f[0], mod)
		lp, ok := level[pkg]
		if !ok && (strings.HasPrefix(pkg, "cmd/") || strings.HasPrefix(pkg, "internal/") || pkg == "gen/writer") {
			continue
		}
		if !ok {
			t.Errorf("library package %s is in no layer", pkg)
			continue
		}
		for _, imp := range f[1:] {
			if d, ok := strings.CutPrefix(imp, mod); ok {
				if li, ok := level[d]; !ok || li >= lp {
					t.Errorf("%s (layer %d) imports %s (layer %d)", pkg, lp, d, li)
				}
			}
		}
	}
}
