package cuda

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestSelectNVRTC checks the choice among candidates: the first that
// loads wins; a named library is the only one tried, and its failure is an
// error naming it and the reason.
func TestSelectNVRTC(t *testing.T) {
	var tried []string
	open := func(ok string) func(string) error {
		tried = nil
		return func(name string) error {
			tried = append(tried, name)
			if name == ok {
				return nil
			}
			return fmt.Errorf("cannot open %s", name)
		}
	}
	got, err := selectNVRTC([]string{"a", "b", "c"}, false, open("b"))
	if err != nil || got != "b" || strings.Join(tried, ",") != "a,b" {
		t.Errorf("search: %q, %v after trying %q", got, err, tried)
	}
	_, err = selectNVRTC([]string{"a", "b"}, false, open("z"))
	if !errors.Is(err, ErrNoNVRTC) || !strings.Contains(err.Error(), "a (cannot open a), b (cannot open b)") {
		t.Errorf("search with no NVRTC: %v", err)
	}
	_, err = selectNVRTC([]string{"/nonexistent/libnvrtc.so"}, true, open("libnvrtc.so"))
	if !errors.Is(err, ErrNoNVRTC) || !strings.Contains(err.Error(), "STRIDEKIT_NVRTC=/nonexistent/libnvrtc.so") ||
		!strings.Contains(err.Error(), "cannot open /nonexistent/libnvrtc.so") || len(tried) != 1 {
		t.Errorf("named library: %v after trying %q", err, tried)
	}
}

// TestOpenNVRTCReasons checks the reasons openNVRTC gives for paths that
// are no NVRTC, without touching the loaded one.
func TestOpenNVRTCReasons(t *testing.T) {
	if err := openNVRTC("/nonexistent/libnvrtc.so"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("absent path: %v", err)
	}
	text := filepath.Join(t.TempDir(), "libnvrtc.so")
	if err := os.WriteFile(text, []byte("not a library"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := openNVRTC(text); err == nil || !strings.Contains(err.Error(), text) {
		t.Errorf("text file: %v", err)
	}
}

// TestNVRTCEnvNamesMissingLibrary runs this test binary again with
// STRIDEKIT_NVRTC naming a library that is not there (the variable is read
// once per process): NVRTCVersion must fail naming it, and not fall back on
// an NVRTC installed on the system.
func TestNVRTCEnvNamesMissingLibrary(t *testing.T) {
	if path := os.Getenv("STRIDEKIT_TEST_NVRTC_CHILD"); path != "" {
		_, _, err := NVRTCVersion()
		loaded, _ := NVRTCPath()
		fmt.Printf("loaded=%q\nerr=%v\nis=%v\n", loaded, err, errors.Is(err, ErrNoNVRTC))
		return
	}
	notALib := filepath.Join(t.TempDir(), "notalib.so")
	if err := os.WriteFile(notALib, []byte("text"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/nonexistent/libnvrtc.so.12", notALib} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestNVRTCEnvNamesMissingLibrary$", "-test.count=1")
		cmd.Env = append(os.Environ(), "STRIDEKIT_TEST_NVRTC_CHILD="+path, "STRIDEKIT_NVRTC="+path)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("child: %v\n%s", err, out)
		}
		s := string(out)
		if !strings.Contains(s, "loaded=\"\"") || !strings.Contains(s, "is=true") || !strings.Contains(s, "STRIDEKIT_NVRTC="+path) {
			t.Errorf("STRIDEKIT_NVRTC=%s: child says\n%s", path, s)
		}
	}
}
