package memview

import (
	"errors"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/stridekit/stridekit/layout"
	"github.com/stridekit/stridekit/runtime/dlpack"
)

// importAndForget imports the case's view of data (versioned or legacy),
// derives views from it, reads it, and drops every view without Close. It
// returns an export of the view when export is set, which then holds the
// tensor.
//
//go:noinline
func importAndForget(t *testing.T, c strided, data []int32, cnt *counter, legacy, export bool) *dlpack.DLManagedTensorVersioned {
	t.Helper()
	var v *StridedMemoryView
	var err error
	if legacy {
		m, err2 := dlpack.ExportLegacy(dlpack.ExportRequest{
			Data: uintptr(unsafe.Pointer(&data[0])) + uintptr(4*c.off), Device: dlpack.DLDevice{DeviceType: dlpack.KDLCPU},
			DType: layout.Int32, Shape: c.shape, Strides: c.strides, Release: cnt.release,
		})
		if err2 != nil {
			t.Fatal(err2)
		}
		v, err = FromDLPackLegacy(m)
	} else {
		v, err = FromDLPack(produce(t, c, data, 0, true, cnt))
	}
	if err != nil {
		t.Fatal(err)
	}
	w, err := v.AsReadOnly().Permute(1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := contents(t, w); len(got) != len(c.want()) {
		t.Fatalf("read %d elements", len(got))
	}
	if !export {
		return nil
	}
	m, err := w.ToDLPack(dlpack.StreamNoSync)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// collectUntil runs garbage collections until cnt reaches want or the
// deadline passes, and returns the count.
func collectUntil(cnt *counter, want int32, d time.Duration) int32 {
	deadline := time.Now().Add(d)
	for {
		runtime.GC()
		if n := cnt.n.Load(); n >= want || time.Now().After(deadline) {
			return n
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestFromDLPackForgottenView: a view of an imported tensor (and the views
// derived from it) dropped without Close gives the tensor back, once, when
// they are collected; an explicit Close gives it back once and the cleanup
// then does nothing.
func TestFromDLPackForgottenView(t *testing.T) {
	c := stridedCases[0] // transposed 3×4 of a 4×3 array
	data := c.data()
	for _, legacy := range []bool{false, true} {
		var forgotten, closed counter
		importAndForget(t, c, data, &forgotten, legacy, false)
		func() {
			v, err := FromDLPack(produce(t, c, data, 0, false, &closed))
			if err != nil {
				t.Fatal(err)
			}
			w, _ := v.Slice(layout.Span(0, 1), layout.All())
			v.Close()
			if n := closed.n.Load(); n != 1 {
				t.Fatalf("Close ran the deleter %d times", n)
			}
			w.Close() // closing a derived view again does nothing
		}()
		if n := collectUntil(&forgotten, 1, 10*time.Second); n != 1 {
			t.Fatalf("legacy %v: deleter of a forgotten view ran %d times after collection, want 1", legacy, n)
		}
		// The cleanups of this round had their chance: more collections
		// change nothing.
		for range 5 {
			runtime.GC()
			time.Sleep(2 * time.Millisecond)
		}
		if n := forgotten.n.Load(); n != 1 {
			t.Errorf("legacy %v: forgotten tensor released %d times, want 1", legacy, n)
		}
		if n := closed.n.Load(); n != 1 {
			t.Errorf("legacy %v: closed tensor released %d times, want 1 (the cleanup ran after Close)", legacy, n)
		}
	}
	runtime.KeepAlive(data)
}

// TestFromDLPackForgottenViewExported: an export of a forgotten view holds
// the tensor; the cleanup gives it back once the export is deleted too.
func TestFromDLPackForgottenViewExported(t *testing.T) {
	c := stridedCases[0]
	data := c.data()
	var cnt counter
	live := dlpack.LiveExports()
	m := importAndForget(t, c, data, &cnt, false, true)
	if n := collectUntil(&cnt, 1, 200*time.Millisecond); n != 0 {
		t.Fatalf("tensor released %d times while an export of its view is held", n)
	}
	dlpack.CallDeleter(m)
	if n := collectUntil(&cnt, 1, 10*time.Second); n != 1 {
		t.Fatalf("tensor released %d times after its export was deleted and its views collected, want 1", n)
	}
	if n := dlpack.LiveExports(); n != live {
		t.Errorf("%d live exports, want %d", n, live)
	}
	runtime.KeepAlive(data)
}

// TestHostCopyTooLarge: the host copy ToHost makes of a broadcast tensor is
// sized before it is allocated: a copy whose size overflows, or that is
// more than the process may hold, is an ErrTooLarge error naming the view
// and the bytes, not a panic or an out-of-memory crash; one that fits is
// made.
func TestHostCopyTooLarge(t *testing.T) {
	one := []float64{2.5}
	mk := func(t *testing.T, shape []int64) *StridedMemoryView {
		t.Helper()
		l, err := layout.New(shape, make([]int64, len(shape)), 8)
		if err != nil {
			t.Fatal(err)
		}
		v, err := FromHost(one, l)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	try := func(t *testing.T, v *StridedMemoryView) (w *StridedMemoryView, buf []byte, err error) {
		t.Helper()
		defer func() {
			if r := recover(); r != nil {
				t.Fatalf("host copy of %v panicked: %v", v, r)
			}
		}()
		return hostCopyOf(v, nil)
	}
	for _, c := range []struct {
		name  string
		shape []int64
		errs  []error
		msg   string
	}{
		{"petabytes", []int64{1 << 20, 1 << 30}, []error{ErrTooLarge}, "needs 9007199254740992 bytes"},
		{"overflow", []int64{1 << 31, 1 << 31}, []error{ErrTooLarge, layout.ErrOverflow}, "(2147483648,2147483648):(0,0)x8"},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := mk(t, c.shape)
			w, buf, err := try(t, v)
			if err == nil || w != nil || buf != nil {
				t.Fatalf("host copy of %v: view %v, %d bytes, error %v", v, w, len(buf), err)
			}
			for _, e := range c.errs {
				if !errors.Is(err, e) {
					t.Errorf("error %q is not %v", err, e)
				}
			}
			if !strings.Contains(err.Error(), c.msg) {
				t.Errorf("error %q does not say %q", err, c.msg)
			}
		})
	}
	t.Run("memory-limit", func(t *testing.T) {
		old := debug.SetMemoryLimit(1 << 20)
		defer debug.SetMemoryLimit(old)
		_, _, err := try(t, mk(t, []int64{1 << 18})) // 2 MiB
		if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "Go memory limit of 1048576 bytes") {
			t.Errorf("2 MiB copy under a 1 MiB limit: %v", err)
		}
	})
	t.Run("fits", func(t *testing.T) {
		w, buf, err := try(t, mk(t, []int64{3, 4}))
		if err != nil {
			t.Fatal(err)
		}
		if len(buf) != 96 || !slices.Equal(w.Shape(), []int64{3, 4}) {
			t.Fatalf("copy %v of %d bytes", w, len(buf))
		}
		got := unsafe.Slice((*float64)(unsafe.Pointer(&buf[0])), 12)
		for _, x := range got {
			if x != 2.5 {
				t.Fatalf("copy holds %v", got)
			}
		}
	})
}
