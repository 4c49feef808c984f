package nccl

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// fakeFS is a file system for candidates: the paths it holds (files and
// directories), globbed with filepath.Match as filepath.Glob would.
type fakeFS []string

func (fs fakeFS) glob(pattern string) ([]string, error) {
	var m []string
	for _, p := range fs {
		ok, err := filepath.Match(pattern, p)
		if err != nil {
			return nil, err
		}
		if ok {
			m = append(m, p)
		}
	}
	return m, nil
}

func TestCandidates(t *testing.T) {
	base := []string{"libnccl.so.2", "libnccl.so", "/usr/local/cuda/lib64/libnccl.so.2", "/usr/local/cuda/lib64/libnccl.so"}
	venvSite := "/opt/venv/lib/python3.12/site-packages"
	tests := []struct {
		name  string
		env   map[string]string
		fs    fakeFS
		want  []string
		named bool
	}{
		{name: "named path", env: map[string]string{"STRIDEKIT_NCCL": "/x/libnccl.so.2", "CUDA_HOME": "/cuda"},
			fs: fakeFS{"/x/libnccl.so.2"}, want: []string{"/x/libnccl.so.2"}, named: true},
		{name: "named soname", env: map[string]string{"STRIDEKIT_NCCL": "libnccl.so.2.28.9"},
			want: []string{"libnccl.so.2.28.9"}, named: true},
		{name: "nothing set", want: base},
		{name: "CUDA_HOME", env: map[string]string{"CUDA_HOME": "/opt/cuda-13"},
			want: append(base[:2:2], "/opt/cuda-13/lib64/libnccl.so.2", "/opt/cuda-13/lib64/libnccl.so",
				"/usr/local/cuda/lib64/libnccl.so.2", "/usr/local/cuda/lib64/libnccl.so")},
		{name: "CUDA_HOME is /usr/local/cuda", env: map[string]string{"CUDA_HOME": "/usr/local/cuda"}, want: base},
		{name: "virtual env wheel, found once", env: map[string]string{"VIRTUAL_ENV": "/opt/venv"},
			fs:   fakeFS{venvSite, venvSite + "/nvidia", venvSite + "/nvidia/nccl/lib/libnccl.so.2"},
			want: append(base, venvSite+"/nvidia/nccl/lib/libnccl.so.2")},
		{name: "cu13 layouts", env: map[string]string{"CONDA_PREFIX": "/conda"},
			fs: fakeFS{"/conda/lib/python3.11/site-packages", "/conda/lib/python3.11/site-packages/nvidia/cu13/lib/libnccl.so.2",
				"/conda/lib/python3.11/site-packages/nvidia/nccl/cu13/lib/libnccl.so.2"},
			want: append(base, "/conda/lib/python3.11/site-packages/nvidia/cu13/lib/libnccl.so.2",
				"/conda/lib/python3.11/site-packages/nvidia/nccl/cu13/lib/libnccl.so.2")},
		{name: "search order", env: map[string]string{"VIRTUAL_ENV": "/opt/venv", "HOME": "/home/u",
			"PATH": "/opt/torch/.venv/bin:relative/bin:/usr/bin:/sbin"},
			fs: fakeFS{
				"/usr/lib/python3/dist-packages", "/usr/lib/python3/dist-packages/nvidia/nccl/lib/libnccl.so.2",
				"/usr/local/lib/python3.12/dist-packages", "/usr/local/lib/python3.12/dist-packages/nvidia/nccl/lib/libnccl.so.2",
				"/home/u/.local/lib/python3.12/site-packages", "/home/u/.local/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2",
				"/opt/torch/.venv/lib/python3.12/site-packages", "/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2",
				venvSite, venvSite + "/nvidia/nccl/lib/libnccl.so", venvSite + "/nvidia/nccl/lib/libnccl.so.2",
			},
			want: append(base, venvSite+"/nvidia/nccl/lib/libnccl.so", venvSite+"/nvidia/nccl/lib/libnccl.so.2",
				"/home/u/.local/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2",
				"/usr/local/lib/python3.12/dist-packages/nvidia/nccl/lib/libnccl.so.2",
				"/usr/lib/python3/dist-packages/nvidia/nccl/lib/libnccl.so.2",
				"/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2")},
		{name: "not python3", fs: fakeFS{"/usr/lib/python2.7/dist-packages", "/usr/lib/python2.7/dist-packages/nvidia/nccl/lib/libnccl.so.2"},
			want: base},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, named := candidates(func(k string) string { return tt.env[k] }, tt.fs.glob)
			if named != tt.named || !slices.Equal(got, tt.want) {
				t.Errorf("candidates = %q (named %v)\nwant         %q (named %v)", got, named, tt.want, tt.named)
			}
		})
	}
}

func TestSelectLibrary(t *testing.T) {
	var tried []string
	open := func(ok string) func(string) (*library, error) {
		return func(name string) (*library, error) {
			tried = append(tried, name)
			if name == ok {
				return &library{path: name}, nil
			}
			return nil, fmt.Errorf("cannot open %s\nsecond line", name)
		}
	}
	l, err := selectLibrary([]string{"a", "b", "c"}, false, open("b"))
	if err != nil || l.path != "b" || !slices.Equal(tried, []string{"a", "b"}) {
		t.Fatalf("got %v, %v after trying %q; want b after a, b", l, err, tried)
	}
	tried = nil
	_, err = selectLibrary([]string{"a", "b"}, false, open("none"))
	var le *LoadError
	if !errors.Is(err, ErrNoNCCL) || !errors.As(err, &le) || len(le.Tried) != 2 || le.Tried[1].Name != "b" {
		t.Fatalf("got %v; want a *LoadError of ErrNoNCCL listing a and b", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "a (cannot open a)") || strings.Contains(msg, "second line") {
		t.Errorf("message %q: want each candidate with the first line of its reason", msg)
	}
	_, err = selectLibrary(nil, false, open("none"))
	if !errors.Is(err, ErrNoNCCL) {
		t.Errorf("no candidates: got %v, want ErrNoNCCL", err)
	}
}

// TestNamedMissing checks that a STRIDEKIT_NCCL naming a missing file is
// the only candidate, and the error names it.
func TestNamedMissing(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no", "libnccl.so.2")
	c, named := candidates(func(k string) string {
		return map[string]string{"STRIDEKIT_NCCL": missing, "CUDA_HOME": "/usr/local/cuda"}[k]
	}, filepath.Glob)
	_, err := selectLibrary(c, named, openLibrary)
	var le *LoadError
	if !errors.Is(err, ErrNoNCCL) || !errors.As(err, &le) || len(le.Tried) != 1 || le.Tried[0].Name != missing {
		t.Fatalf("got %v; want ErrNoNCCL naming %s alone", err, missing)
	}
	if !errors.Is(le.Tried[0].Err, os.ErrNotExist) {
		t.Errorf("reason %v: want the file's absence", le.Tried[0].Err)
	}
	if msg := err.Error(); !strings.Contains(msg, "STRIDEKIT_NCCL="+missing) || !strings.Contains(msg, "no other NCCL") {
		t.Errorf("message %q: want it to name STRIDEKIT_NCCL and say nothing else is tried", msg)
	}
}

const childEnv = "STRIDEKIT_NCCL_TEST_CHILD"

// runChild is the test binary run as a child by TestLoadNamedMissing: a
// fresh process, whose Load reads the environment the parent set.
func runChild() int {
	err := Load()
	_, verr := Version()
	_, uerr := NewUniqueID()
	var le *LoadError
	want := os.Getenv("STRIDEKIT_NCCL")
	switch {
	case !errors.As(err, &le) || len(le.Tried) != 1 || le.Tried[0].Name != want:
		fmt.Printf("Load: %v; want a LoadError naming %s alone\n", err, want)
	case verr != err || uerr != err:
		fmt.Printf("Version: %v, NewUniqueID: %v; want Load's error %v\n", verr, uerr, err)
	default:
		fmt.Println("ok")
		return 0
	}
	return 1
}

// TestLoadNamedMissing runs Load, in a child process, with STRIDEKIT_NCCL
// naming a missing file: the error is the same for every call and names
// that file alone.
func TestLoadNamedMissing(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Skip(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=1", "STRIDEKIT_NCCL="+filepath.Join(t.TempDir(), "missing", "libnccl.so.2"))
	out, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Fatalf("child: %v\n%s", err, out)
	}
}

func TestVersionString(t *testing.T) {
	for code, want := range map[int]string{22805: "2.28.5", 21400: "2.14.0", 2804: "2.8.4", 23007: "2.30.7"} {
		if got := versionString(code); got != want {
			t.Errorf("versionString(%d) = %s, want %s", code, got, want)
		}
	}
}

func TestFakeLoad(t *testing.T) {
	f := loadFake(t)
	if f.lib.version != 22805 || !f.lib.configUsable() || f.lib.getLastError == 0 {
		t.Errorf("fake 2.28.5: version %d, config usable %v, ncclGetLastError %#x", f.lib.version, f.lib.configUsable(), f.lib.getLastError)
	}
	old := loadFake(t, "-DFAKE_OLD")
	if old.lib.version != 21304 || old.lib.configUsable() || old.lib.commInitRankConfig != 0 {
		t.Errorf("fake 2.13.4: version %d, config usable %v", old.lib.version, old.lib.configUsable())
	}
	so, err := buildFake("fakenccl_nosend", "-DFAKE_NO_SEND")
	if err != nil {
		t.Skip(err)
	}
	if _, err := openLibrary(so); err == nil || !strings.Contains(err.Error(), "lacks ncclSend") {
		t.Errorf("a library without ncclSend: got %v, want an error naming it", err)
	}
}
