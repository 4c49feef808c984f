package nccl

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
	"github.com/stridekit/stridekit/internal/dlib"
)

// library is one loaded NCCL: where it came from, its version and its
// entry points. The package's library is loaded once (Load); tests load
// others (a fake NCCL) beside it, which is why this is a value and not a
// set of globals.
type library struct {
	path    string
	handle  uintptr
	version int // ncclGetVersion's code, e.g. 22805 for 2.28.5

	getVersion, getUniqueID, getErrorString, getLastError uintptr
	commInitRank, commInitRankConfig                      uintptr
	commGetAsyncError, commAbort, commDestroy             uintptr
	groupStart, groupEnd, send, recv                      uintptr
}

// symbol is one entry point to look up: a missing required one fails the
// load, a missing optional one leaves its slot 0.
type symbol struct {
	name     string
	p        *uintptr
	optional bool
}

func (l *library) symbols() []symbol {
	return []symbol{
		{"ncclGetVersion", &l.getVersion, false},
		{"ncclGetUniqueId", &l.getUniqueID, false},
		{"ncclGetErrorString", &l.getErrorString, false},
		{"ncclGetLastError", &l.getLastError, true},             // NCCL 2.13
		{"ncclCommInitRankConfig", &l.commInitRankConfig, true}, // NCCL 2.14
		{"ncclCommInitRank", &l.commInitRank, false},
		{"ncclCommGetAsyncError", &l.commGetAsyncError, false},
		{"ncclCommAbort", &l.commAbort, false},
		{"ncclCommDestroy", &l.commDestroy, false},
		{"ncclGroupStart", &l.groupStart, false},
		{"ncclGroupEnd", &l.groupEnd, false},
		{"ncclSend", &l.send, false},
		{"ncclRecv", &l.recv, false},
	}
}

// Attempt is one library Load tried: the name given to the dynamic loader
// (a soname or a path) and why it could not be used.
type Attempt struct {
	Name string
	Err  error
}

// LoadError reports that no NCCL library could be loaded: every candidate
// tried, in order, with its reason. It matches ErrNoNCCL under errors.Is.
type LoadError struct {
	// Named is true when the one candidate was the library
	// $STRIDEKIT_NCCL names, which stops the search.
	Named bool
	Tried []Attempt
}

func (e *LoadError) Error() string {
	if e.Named && len(e.Tried) == 1 {
		return fmt.Sprintf("%v: STRIDEKIT_NCCL=%s cannot be loaded (no other NCCL is tried while it is set): %v",
			ErrNoNCCL, e.Tried[0].Name, e.Tried[0].Err)
	}
	parts := make([]string, len(e.Tried))
	for i, a := range e.Tried {
		parts[i] = a.Name + " (" + dlib.FirstLine(a.Err.Error()) + ")"
	}
	return fmt.Sprintf("%v: tried %s", ErrNoNCCL, strings.Join(parts, "; "))
}

// Unwrap returns ErrNoNCCL.
func (e *LoadError) Unwrap() error { return ErrNoNCCL }

var global struct {
	once sync.Once
	lib  *library
	err  error
}

// Load loads NCCL, once per process; every function of the package that
// needs NCCL calls it, so calling it first is only a way to learn early
// whether NCCL is there. Where $STRIDEKIT_NCCL is set, the library it names
// (a path or a soname) is the only candidate; otherwise the candidates are,
// in order: the sonames libnccl.so.2 and libnccl.so (the dynamic loader's
// own search: LD_LIBRARY_PATH, the ld.so cache), the same names in
// $CUDA_HOME/lib64 and /usr/local/cuda/lib64, then the libnccl.so* of
// NVIDIA's Python wheels (nvidia-nccl-cu12, nvidia-nccl-cu13, which
// PyTorch installs): nvidia/nccl*/lib, nvidia/*/lib and nvidia/*/*/lib of
// every site-packages or dist-packages directory of python3* under
// $VIRTUAL_ENV, $CONDA_PREFIX, $HOME/.local, /usr/local, /usr, and the
// prefix of every directory of $PATH named bin (where a virtual
// environment's python3 lives). The error is a *LoadError, matching
// ErrNoNCCL, that lists each candidate and why it failed.
func Load() error {
	global.once.Do(func() {
		c, named := candidates(os.Getenv, filepath.Glob)
		global.lib, global.err = selectLibrary(c, named, openLibrary)
	})
	return global.err
}

// loaded returns the package's library, loading it at the first call.
func loaded() (*library, error) {
	if err := Load(); err != nil {
		return nil, err
	}
	return global.lib, nil
}

// Version returns the loaded NCCL's version code (ncclGetVersion):
// 10000·major + 100·minor + patch, e.g. 22805 for NCCL 2.28.5 (versions
// before 2.9 count 1000·major + 100·minor + patch).
func Version() (int, error) {
	l, err := loaded()
	if err != nil {
		return 0, err
	}
	return l.version, nil
}

// LibraryPath returns the name the loaded NCCL was found under: a soname
// or a path, as the search of Load tried it.
func LibraryPath() (string, error) {
	l, err := loaded()
	if err != nil {
		return "", err
	}
	return l.path, nil
}

// versionString spells a version code as major.minor.patch.
func versionString(code int) string {
	major, rest := code/10000, code%10000
	if code < 10000 { // before 2.9: 1000·major + 100·minor + patch
		major, rest = code/1000, code%1000
	}
	return fmt.Sprintf("%d.%d.%d", major, rest/100, rest%100)
}

// candidates lists, in search order, the libraries Load tries, reading the
// environment through getenv and the file system through glob (see Load).
// named reports that the list is the one library $STRIDEKIT_NCCL names.
func candidates(getenv func(string) string, glob func(string) ([]string, error)) (c []string, named bool) {
	if c, named = dlib.Candidates(getenv, "STRIDEKIT_NCCL", "libnccl.so.2", "libnccl.so"); named {
		return c, true
	}
	for _, site := range siteDirs(getenv, glob) {
		for _, pat := range []string{"nvidia/nccl*/lib/libnccl.so*", "nvidia/*/lib/libnccl.so*", "nvidia/*/*/lib/libnccl.so*"} {
			m, _ := glob(filepath.Join(site, pat)) // only a malformed pattern errs
			slices.Sort(m)
			c = append(c, m...)
		}
	}
	return dedupe(c), false
}

// siteDirs returns the Python package directories Load searches for
// NVIDIA's wheels, in order (see Load).
func siteDirs(getenv func(string) string, glob func(string) ([]string, error)) []string {
	var prefixes []string
	for _, v := range []string{"VIRTUAL_ENV", "CONDA_PREFIX"} {
		if p := getenv(v); p != "" {
			prefixes = append(prefixes, p)
		}
	}
	if h := getenv("HOME"); h != "" {
		prefixes = append(prefixes, filepath.Join(h, ".local"))
	}
	prefixes = append(prefixes, "/usr/local", "/usr")
	for _, d := range filepath.SplitList(getenv("PATH")) {
		if d != "" && filepath.IsAbs(d) && filepath.Base(d) == "bin" {
			prefixes = append(prefixes, filepath.Dir(d))
		}
	}
	var sites []string
	for _, p := range dedupe(prefixes) {
		for _, kind := range []string{"site-packages", "dist-packages"} {
			m, _ := glob(filepath.Join(p, "lib", "python3*", kind))
			slices.Sort(m)
			sites = append(sites, m...)
		}
	}
	return dedupe(sites)
}

// dedupe drops every repeat of an earlier element, keeping the order.
func dedupe(s []string) []string {
	seen := make(map[string]bool, len(s))
	out := s[:0:0]
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

// selectLibrary returns the first candidate open loads, or a *LoadError
// listing each with its reason. A named candidate is the only one.
func selectLibrary(cands []string, named bool, open func(string) (*library, error)) (*library, error) {
	e := &LoadError{Named: named}
	for _, name := range cands {
		l, err := open(name)
		if err == nil {
			return l, nil
		}
		e.Tried = append(e.Tried, Attempt{Name: name, Err: err})
	}
	if len(e.Tried) == 0 {
		e.Tried = append(e.Tried, Attempt{Name: "(none)", Err: errors.New("no candidate")})
	}
	return nil, e
}

// openLibrary loads the NCCL library name (a path is checked to exist
// first, for a clearer reason than dlopen's), binds its entry points and
// asks its version. It loads it RTLD_LOCAL, so its symbols stay out of the
// process's global namespace (a second NCCL, say PyTorch's, may be loaded
// beside it). A library that loads but lacks a required symbol, or whose
// ncclGetVersion fails, is closed again.
func openLibrary(name string) (*library, error) {
	if strings.Contains(name, "/") {
		if _, err := os.Stat(name); err != nil {
			return nil, err
		}
	}
	h, err := purego.Dlopen(name, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		return nil, errors.New(dlib.FirstLine(err.Error()))
	}
	l := &library{path: name, handle: h}
	err = l.bind()
	if err == nil {
		err = l.readVersion()
	}
	if err != nil {
		if cerr := purego.Dlclose(h); cerr != nil {
			err = fmt.Errorf("%w (closing it: %s)", err, dlib.FirstLine(cerr.Error()))
		}
		return nil, err
	}
	return l, nil
}

// bind looks every entry point up with Dlsym; a missing required one is an
// error naming it (purego.RegisterLibFunc would panic instead).
func (l *library) bind() error {
	var missing []string
	for _, s := range l.symbols() {
		p, err := purego.Dlsym(l.handle, s.name)
		if err != nil || p == 0 {
			if !s.optional {
				missing = append(missing, s.name)
			}
			continue
		}
		*s.p = p
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s lacks %s", l.path, strings.Join(missing, ", "))
	}
	return nil
}

func (l *library) readVersion() error {
	v := new(int32)
	r, _, _ := purego.SyscallN(l.getVersion, uintptr(unsafe.Pointer(v)))
	if err := l.check("ncclGetVersion", r, 0); err != nil {
		return err
	}
	l.version = int(*v)
	return nil
}

// check returns nil for ncclSuccess and an *Error otherwise, with NCCL's
// name for the code and its last error message.
func (l *library) check(call string, r uintptr, comm uintptr) error {
	code := int(int32(r))
	if code == ncclSuccess {
		return nil
	}
	return l.newError(call, code, comm)
}

// newError makes the *Error of a failed call (an init or an exchange whose
// asynchronous state, rather than its return value, holds the code).
func (l *library) newError(call string, code int, comm uintptr) *Error {
	e := &Error{Call: call, Code: code}
	if l.getErrorString != 0 {
		p, _, _ := purego.SyscallN(l.getErrorString, uintptr(code))
		e.Name = dlib.GoString(p)
	}
	if e.Name == "" {
		e.Name = resultName(code)
	}
	if l.getLastError != 0 {
		p, _, _ := purego.SyscallN(l.getLastError, comm)
		e.Last = dlib.GoString(p)
	}
	return e
}
