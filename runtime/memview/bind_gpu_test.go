package memview

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stridekit/stridekit/internal/pairgen"
	"github.com/stridekit/stridekit/internal/testenv"
	"github.com/stridekit/stridekit/kernels"
	"github.com/stridekit/stridekit/layout"
	"github.com/stridekit/stridekit/runtime/cuda"
	"github.com/stridekit/stridekit/runtime/hostcopy"
)

// TestGPUBindingCacheConcurrent: 64 goroutines copy pairs drawn from a
// shared set of 24 random layouts pairs at once, device to device, each in
// buffers of its own (so they share bindings but not memory), and check
// every result against runtime/hostcopy; half of them go through a held
// BoundCopy rebound to their own views. The binding cache is emptied
// midway, so bindings are made concurrently too. Run under -race as well.
func TestGPUBindingCacheConcurrent(t *testing.T) {
	dev := testenv.NeedGPU(t)
	testenv.NeedNVRTC(t)
	seed := gpuSeed(t)
	r := rand.New(rand.NewPCG(seed, 5))
	pairs := make([]pairgen.Pair, 24)
	for i := range pairs {
		pairs[i] = pairgen.Random(r, 64<<10)
	}
	const workers, reps = 64, 12
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			if err := bindingWorker(dev, w, seed, pairs, reps); err != nil {
				errs <- fmt.Errorf("worker %d: %w", w, err)
			}
		})
		if w == workers/2 {
			forget()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// bindingWorker copies reps random pairs of pairs on a stream of its own,
// checking each.
func bindingWorker(dev *cuda.Device, w int, seed uint64, pairs []pairgen.Pair, reps int) error {
	s, err := dev.NewStream(true)
	if err != nil {
		return err
	}
	defer s.Close()
	r := rand.New(rand.NewPCG(seed, uint64(w)))
	for range reps {
		c := pairs[r.IntN(len(pairs))]
		if err := checkedCopy(dev, s, r, c, w%2 == 0); err != nil {
			return fmt.Errorf("%v: %w", c, err)
		}
	}
	return nil
}

// checkedCopy copies pair c between fresh device buffers (through a
// BoundCopy when bound) and compares dst's span with hostcopy's.
func checkedCopy(dev *cuda.Device, s *cuda.Stream, r *rand.Rand, c pairgen.Pair, bound bool) error {
	sb, db := c.Src.RequiredSizeInBytes(), c.Dst.RequiredSizeInBytes()
	src := make([]byte, sb)
	pairgen.Fill(r, src)
	want := make([]byte, db)
	pairgen.Poison(want)
	got := bytes.Clone(want)
	if err := hostcopy.Copy(want, c.Dst, src, c.Src); err != nil {
		return err
	}
	sbuf, err := dev.Alloc(int(max(sb, 1)), s)
	if err != nil {
		return err
	}
	defer sbuf.Close()
	dbuf, err := dev.Alloc(int(max(db, 1)), s)
	if err != nil {
		return err
	}
	defer dbuf.Close()
	dt, _ := layout.Opaque(c.Dst.Itemsize())
	sv, err := FromBuffer(sbuf, c.Src, dt)
	if err != nil {
		return err
	}
	dv, err := FromBuffer(dbuf, c.Dst, dt)
	if err != nil {
		return err
	}
	hs, _ := FromHost(src, bytesLayout(sb))
	hd, _ := FromHost(got, bytesLayout(db))
	// whole is a view's span as bytes, from its lowest byte.
	whole := func(v *StridedMemoryView) *StridedMemoryView {
		u, _ := v.ViewAt(int64(v.low)-int64(v.ptr), bytesLayout(v.span), layout.Uint8)
		return u
	}
	if err := whole(sv).CopyFrom(hs, s); err != nil {
		return err
	}
	if err := whole(dv).CopyFrom(hd, s); err != nil {
		return err
	}
	if bound {
		bc, err := Bind(dv, sv)
		if err == nil {
			err = bc.Copy(s)
		}
		if err != nil {
			return err
		}
	} else if err := dv.CopyFrom(sv, s); err != nil {
		return err
	}
	if err := hd.CopyFrom(whole(dv), s); err != nil {
		return err
	}
	if !bytes.Equal(got, want) {
		return errors.New("dst differs from hostcopy's")
	}
	return nil
}

// TestGPUCopyAfterClose: copies racing with the Close of their source
// buffer either run whole (before Close frees it) or fail with ErrClosed;
// none launches on freed memory (compute-sanitizer's memcheck would see it)
// or returns another error.
func TestGPUCopyAfterClose(t *testing.T) {
	dev := testenv.NeedGPU(t)
	testenv.NeedNVRTC(t)
	s := testenv.NewStream(t, dev)
	const n = 256
	l, _ := layout.Dense([]int64{n, n}, 4, layout.C)
	dbuf, err := dev.Alloc(n*n*4, s)
	if err != nil {
		t.Fatal(err)
	}
	defer dbuf.Close()
	dv, _ := FromBuffer(dbuf, l, layout.Float32)
	closed := 0
	for round := range 20 {
		sbuf, err := dev.Alloc(n*n*4, s)
		if err != nil {
			t.Fatal(err)
		}
		sv, _ := FromBuffer(sbuf, l, layout.Float32)
		st, _ := sv.Permute(1, 0)
		bc, err := Bind(dv, st)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		errs := make([]error, 8)
		for i := range errs {
			wg.Go(func() {
				for range 50 {
					if i%2 == 0 {
						errs[i] = dv.CopyFrom(st, s)
					} else {
						errs[i] = bc.Copy(s)
					}
					if errs[i] != nil {
						return
					}
				}
			})
		}
		if round%2 == 1 {
			sbuf.Close()
		}
		wg.Wait()
		sbuf.Close()
		for _, err := range errs {
			if err != nil && !errors.Is(err, ErrClosed) {
				t.Fatalf("round %d: %v", round, err)
			}
			if err != nil {
				closed++
			}
		}
		if err := dv.CopyFrom(st, s); !errors.Is(err, ErrClosed) {
			t.Fatalf("round %d: copy from a closed buffer: %v, want ErrClosed", round, err)
		}
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d copies saw their buffer closed", closed)
}

// bytesLayout is n dense bytes.
func bytesLayout(n int64) layout.Layout {
	l, _ := layout.Dense([]int64{n}, 1, layout.C)
	return l
}

// countingAlloc is an Allocator that hands out what dev gives, or (short)
// buffers too small for the request, and keeps what it handed out.
type countingAlloc struct {
	short bool
	mu    sync.Mutex
	got   []*cuda.Buffer
}

func (a *countingAlloc) keep(b *cuda.Buffer, err error) (*cuda.Buffer, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if b != nil {
		a.got = append(a.got, b)
	}
	return b, err
}

func (a *countingAlloc) size(n int) int {
	if a.short {
		return n / 2
	}
	return n
}

func (a *countingAlloc) AllocDevice(dev *cuda.Device, size int, s *cuda.Stream) (*cuda.Buffer, error) {
	return a.keep(dev.Alloc(a.size(size), s))
}

func (a *countingAlloc) AllocHost(dev *cuda.Device, size int) (*cuda.Buffer, error) {
	return a.keep(dev.AllocHost(a.size(size)))
}

// TestGPUWithAllocator: copies that need temporaries (an overlapping device
// copy, a staged upload of a strided pageable view) take them from the
// Allocator and give them back; a buffer too small is refused with
// ErrInvalidValue, closed, and the copy fails without touching dst.
func TestGPUWithAllocator(t *testing.T) {
	dev := testenv.NeedGPU(t)
	testenv.NeedNVRTC(t)
	s := testenv.NewStream(t, dev)
	const n = 512
	l, _ := layout.Dense([]int64{n, n}, 4, layout.C)
	buf, err := dev.Alloc(n*n*4, s)
	if err != nil {
		t.Fatal(err)
	}
	defer buf.Close()
	dv, _ := FromBuffer(buf, l, layout.Float32)
	dT, _ := dv.Permute(1, 0) // overlaps dv: a snapshot temporary
	host := make([]float32, 2*n*n)
	wide, _ := layout.Dense([]int64{n, 2 * n}, 4, layout.C)
	hw, _ := FromHost(host, wide)
	hs, _ := hw.Slice(layout.All(), layout.Range{Start: layout.Omit, Stop: layout.Omit, Step: 2}) // staged
	for _, short := range []bool{false, true} {
		a := &countingAlloc{short: short}
		for name, copy := range map[string]func() error{
			"overlapping device copy": func() error { return dv.CopyFrom(dT, s, WithAllocator(a), Blocking(true)) },
			"staged upload":           func() error { return dv.CopyFrom(hs, s, WithAllocator(a)) },
		} {
			err := copy()
			switch {
			case short && !errors.Is(err, cuda.ErrInvalidValue):
				t.Errorf("%s with short buffers: %v, want ErrInvalidValue", name, err)
			case !short && err != nil:
				t.Errorf("%s: %v", name, err)
			}
		}
		if len(a.got) == 0 {
			t.Errorf("short=%v: the allocator was never asked", short)
		}
		if err := s.Synchronize(); err != nil {
			t.Fatal(err)
		}
		for _, b := range a.got {
			if short && !b.Closed() {
				t.Errorf("a refused buffer %v was not closed", b)
			}
			b.Close()
		}
	}
}

// TestGPUSpecialisedInBackground: a box-tile copy of 4-byte items (which
// the tuning table specialises) asks for its specialised kernel on its
// second copy; the copies go on on the generic kernel, never waiting, and
// once the background compile lands Explain reports the specialised tier
// and the copies stay correct.
func TestGPUSpecialisedInBackground(t *testing.T) {
	dev := testenv.NeedGPU(t)
	testenv.NeedNVRTC(t)
	s := testenv.NewStream(t, dev)
	r := rand.New(rand.NewPCG(gpuSeed(t), 6))
	dl, _ := layout.New([]int64{37, 29, 23}, nil, 4)
	sl, _ := layout.New([]int64{37, 29, 23}, []int64{1, 37 * 23, 37}, 4)
	c := pairgen.Pair{Dst: dl, Src: sl}
	deadline := time.Now().Add(2 * time.Minute)
	for i := 0; ; i++ {
		if err := checkedCopy(dev, s, r, c, i%2 == 1); err != nil {
			t.Fatalf("copy %d: %v", i, err)
		}
		bc, err := bindPair(dev, s, c)
		if err != nil {
			t.Fatal(err)
		}
		cp := bc.Explain()
		if cp.Plan.Sig.Class != layout.ClassBoxTile {
			t.Fatalf("plan %v, want a box tile", cp.Plan.Sig)
		}
		if cp.Tier == kernels.TierSpecialised {
			t.Logf("specialised after %d copies: %s", i+1, cp.Kernel)
			if err := checkedCopy(dev, s, r, c, false); err != nil {
				t.Fatalf("after the switch: %v", err)
			}
			return
		}
		if time.Now().After(deadline) {
			ks, dropped := kernels.Specialisations()
			t.Fatalf("still %v after %d copies; specialisations %+v, %d dropped", cp.Tier, i+1, ks, dropped)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// bindPair binds a copy between fresh device views of pair c (what Explain
// reports for it).
func bindPair(dev *cuda.Device, s *cuda.Stream, c pairgen.Pair) (*BoundCopy, error) {
	sbuf, err := dev.Alloc(int(c.Src.RequiredSizeInBytes()), s)
	if err != nil {
		return nil, err
	}
	defer sbuf.Close()
	dbuf, err := dev.Alloc(int(c.Dst.RequiredSizeInBytes()), s)
	if err != nil {
		return nil, err
	}
	defer dbuf.Close()
	dt, _ := layout.Opaque(c.Dst.Itemsize())
	sv, err := FromBuffer(sbuf, c.Src, dt)
	if err != nil {
		return nil, err
	}
	dv, err := FromBuffer(dbuf, c.Dst, dt)
	if err != nil {
		return nil, err
	}
	return Bind(dv, sv)
}
