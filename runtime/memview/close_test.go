package memview

import (
	"errors"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/stridekit/stridekit/internal/testenv"
	"github.com/stridekit/stridekit/layout"
	"github.com/stridekit/stridekit/runtime/cuda"
	"github.com/stridekit/stridekit/runtime/dlpack"
)

// TestClosedHostViewDoesNotCopy: a closed view of Go memory, or a view
// derived from it, is neither a copy's source nor its destination.
func TestClosedHostViewDoesNotCopy(t *testing.T) {
	l, _ := layout.Dense([]int64{8, 8}, 4, layout.C)
	a, _ := FromHost(make([]float32, 64), l)
	b, _ := FromHost(make([]float32, 64), l)
	aT, _ := a.Permute(1, 0)
	if err := b.CopyFrom(aT, nil); err != nil {
		t.Fatal(err)
	}
	if err := aT.Close(); err != nil {
		t.Fatal(err)
	}
	for name, copy := range map[string]func() error{
		"closed src":         func() error { return b.CopyFrom(a, nil) },
		"closed derived src": func() error { return b.CopyFrom(aT, nil) },
		"closed dst":         func() error { return a.CopyFrom(b, nil) },
	} {
		if err := copy(); !errors.Is(err, ErrClosed) {
			t.Errorf("%s: %v, want ErrClosed", name, err)
		}
	}
	bc, err := Bind(b, a)
	if err == nil {
		t.Errorf("Bind of a closed view: nil error")
	} else if !errors.Is(err, ErrClosed) {
		t.Errorf("Bind of a closed view: %v, want ErrClosed", err)
	}
	_ = bc
}

// TestCloseWaitsForCopy: Close of a DLPack view while a copy reads it. The
// producer's deleter poisons its memory, so a copy still reading when the
// deleter ran would copy poison: every copy must either finish with the
// right data (Close waited for it) or fail with ErrClosed (it started
// after Close), and the deleter runs once.
func TestCloseWaitsForCopy(t *testing.T) {
	const n = 1 << 23
	data := make([]int32, n)
	out := make([]int32, n)
	l, _ := layout.Dense([]int64{n}, 4, layout.C)
	dst, _ := FromHost(out, l)
	r := rand.New(rand.NewPCG(3, 4))
	whole, closed := 0, 0
	for round := range 24 {
		for i := range data {
			data[i] = int32(i + round)
		}
		var releases atomic.Int32
		m, err := dlpack.Export(dlpack.ExportRequest{
			Data: uintptr(unsafe.Pointer(&data[0])), Device: dlpack.DLDevice{DeviceType: dlpack.KDLCPU},
			DType: layout.Int32, Shape: []int64{n}, Strides: []int64{1},
			Release: func() {
				releases.Add(1)
				for i := range data {
					data[i] = -1
				}
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		src, err := FromDLPack(m)
		if err != nil {
			t.Fatal(err)
		}
		rev, _ := src.Slice(layout.Range{Start: layout.Omit, Stop: layout.Omit, Step: -1})
		done := make(chan error, 1)
		go func() { done <- dst.CopyFrom(rev, nil) }()
		time.Sleep(time.Duration(r.IntN(3000)) * time.Microsecond)
		if err := src.Close(); err != nil {
			t.Fatal(err)
		}
		err = <-done
		switch {
		case err == nil:
			whole++
			for i := range out {
				if out[i] != int32(n-1-i+round) {
					t.Fatalf("round %d: out[%d] = %d, want %d: the copy read released memory", round, i, out[i], n-1-i+round)
				}
			}
		case errors.Is(err, ErrClosed):
			closed++
		default:
			t.Fatalf("round %d: %v", round, err)
		}
		if got := releases.Load(); got != 1 {
			t.Fatalf("round %d: deleter ran %d times", round, got)
		}
	}
	t.Logf("%d copies finished before Close, %d found the view closed", whole, closed)
}

// TestGPUFromOwnedBufferCloses: closing a view made by FromOwnedBuffer closes
// its buffer; a view made by FromBuffer leaves it open.
func TestGPUFromOwnedBufferCloses(t *testing.T) {
	testenv.NeedGPU(t) // FromHandle asks the driver about the pointer
	l, _ := layout.Dense([]int64{4}, 1, layout.C)
	for _, owned := range []bool{false, true} {
		mem := make([]byte, 4)
		buf, err := cuda.FromHandle(uintptr(unsafe.Pointer(&mem[0])), len(mem), mem)
		if err != nil {
			t.Fatal(err)
		}
		mk := FromBuffer
		if owned {
			mk = FromOwnedBuffer
		}
		v, err := mk(buf, l, layout.Uint8)
		if err != nil {
			t.Fatal(err)
		}
		if err := v.Close(); err != nil {
			t.Fatal(err)
		}
		if buf.Closed() != owned {
			t.Errorf("owned %v: buffer closed %v", owned, buf.Closed())
		}
	}
}
