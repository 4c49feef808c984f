// Package cudaemu runs stridekit's generated CUDA copy kernels on the CPU,
// for tests on machines without a GPU (CI): the kernel's source is compiled
// with the host C++ compiler under a small header (emu.h) that maps CUDA's
// built-ins to C++ (threads are OS threads, __syncthreads a barrier, blocks
// run one after another), and launched with the grid, block, shared memory
// and argument block that gen.Pack computes. It checks the kernels' logic
// and the argument block's layout (the C struct's size must match Pack's
// bytes, and the results must match runtime/hostcopy); it says nothing
// about speed, and it cannot see races between blocks.
package cudaemu

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/stridekit/stridekit/gen"
)

//go:embed emu.h
var header string

//go:embed main.cpp.in
var driver string

// ErrNoCompiler reports that no C++20 compiler (g++ or c++) is on PATH.
var ErrNoCompiler = errors.New("cudaemu: no C++ compiler")

var (
	cxxOnce sync.Once
	cxx     string
	cxxErr  error
	dirOnce sync.Once
	dir     string
	dirErr  error
	builds  sync.Map // source hash → *build
)

type build struct {
	once sync.Once
	bin  string
	err  error
}

// Available reports whether kernels can be emulated here.
func Available() error {
	cxxOnce.Do(func() {
		for _, c := range []string{"g++", "c++"} {
			if p, err := exec.LookPath(c); err == nil {
				cxx = p
				return
			}
		}
		cxxErr = ErrNoCompiler
	})
	return cxxErr
}

var sharedDecl = regexp.MustCompile(`extern __shared__[^;]*?(\w+)\[\];`)

// compile builds the emulator of kernel name (in namespace ns) of source,
// once per source in a process.
func compile(source, ns, name string) (string, error) {
	if err := Available(); err != nil {
		return "", err
	}
	dirOnce.Do(func() { dir, dirErr = os.MkdirTemp("", "cudaemu-") })
	if dirErr != nil {
		return "", dirErr
	}
	h := sha256.Sum256([]byte(source))
	key := hex.EncodeToString(h[:8])
	v, _ := builds.LoadOrStore(key, new(build))
	b := v.(*build)
	b.once.Do(func() {
		src := sharedDecl.ReplaceAllString(source, "unsigned char* $1 = emu_dynamic_shared;")
		prog := header + src + "\n#define EMU_NS " + ns + "\n#define EMU_KERNEL " + name + "\n" + driver
		cpp := filepath.Join(dir, key+".cpp")
		if err := os.WriteFile(cpp, []byte(prog), 0o644); err != nil {
			b.err = err
			return
		}
		b.bin = filepath.Join(dir, key)
		out, err := exec.Command(cxx, "-std=c++20", "-O1", "-pthread", "-w", "-o", b.bin, cpp).CombinedOutput()
		if err != nil {
			b.err = fmt.Errorf("cudaemu: compiling %s: %v\n%.4000s", name, err, out)
		}
	})
	return b.bin, b.err
}

// Launch runs kernel name of source once, as cuLaunchKernel would with
// launch l and parameters (dst+dOff, src+sOff, args): dst and src are the
// bytes of the two views' spans, placed at addresses congruent to dstMis
// and srcMis modulo 256 (the alignments the plan was made for). dst is
// updated in place.
func Launch(source, name string, l gen.Launch, args []byte, dst []byte, dOff int64, dstMis int, src []byte, sOff int64, srcMis int) error {
	bin, err := compile(source, "ns_"+name, name)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(dir, "run-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	files := map[string][]byte{"args": args, "src": src, "dst": dst}
	for n, b := range files {
		if err := os.WriteFile(filepath.Join(tmp, n), b, 0o644); err != nil {
			return err
		}
	}
	out := filepath.Join(tmp, "out")
	num := func(v uint32) string { return strconv.FormatUint(uint64(v), 10) }
	cmd := exec.Command(bin, filepath.Join(tmp, "args"), filepath.Join(tmp, "src"), filepath.Join(tmp, "dst"),
		num(l.Grid.X), num(l.Grid.Y), num(l.Grid.Z), num(l.Block.X), num(l.Block.Y), num(l.Block.Z),
		strconv.Itoa(l.Shared), strconv.Itoa(srcMis), strconv.Itoa(dstMis),
		strconv.FormatInt(dOff, 10), strconv.FormatInt(sOff, 10), out)
	if msg, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("cudaemu: running %s: %v: %s", name, err, strings.TrimSpace(string(msg)))
	}
	got, err := os.ReadFile(out)
	if err != nil {
		return err
	}
	if len(got) != len(dst) {
		return fmt.Errorf("cudaemu: %s wrote %d bytes back, want %d", name, len(got), len(dst))
	}
	copy(dst, got)
	return nil
}
