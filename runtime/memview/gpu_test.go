package memview

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stridekit/stridekit/internal/pairgen"
	"github.com/stridekit/stridekit/internal/testenv"
	"github.com/stridekit/stridekit/layout"
	"github.com/stridekit/stridekit/runtime/cuda"
)

// The GPU suite: random pairs of every kind (internal/pairgen: ranks 1–8,
// itemsizes 1–16 odd ones included, negative strides, broadcasts, slices
// with steps, views at offsets inside larger buffers) copied between every
// pair of memory spaces (device, pinned host, pageable host), each checked
// byte for byte against runtime/hostcopy on a poisoned destination buffer,
// margins included. STRIDEKIT_GPU_PAIRS sets the number of pairs (default
// 10,000; 300 with -short), STRIDEKIT_GPU_SEED replays a run.

// arena is one large buffer of a memory space that views are placed in.
type arena struct {
	kind cuda.MemoryKind
	buf  *cuda.Buffer // device or pinned; nil for pageable
	host []byte       // pageable memory
	size int
}

func newArena(t *testing.T, dev *cuda.Device, kind cuda.MemoryKind, size int) *arena {
	a := &arena{kind: kind, size: size}
	var err error
	switch kind {
	case cuda.MemoryDevice:
		a.buf, err = dev.Alloc(size, nil)
	case cuda.MemoryHost:
		a.buf, err = dev.AllocHost(size)
	default:
		a.host = make([]byte, size)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.buf.Close() })
	return a
}

// put writes b at offset 0 of the arena.
func (a *arena) put(t *testing.T, b []byte) {
	switch a.kind {
	case cuda.MemoryDevice:
		if err := a.buf.CopyFromHost(b); err != nil {
			t.Fatal(err)
		}
	case cuda.MemoryHost:
		h, _ := a.buf.Bytes()
		copy(h, b)
	default:
		copy(a.host, b)
	}
}

// get reads n bytes at offset 0 of the arena.
func (a *arena) get(t *testing.T, n int) []byte {
	out := make([]byte, n)
	switch a.kind {
	case cuda.MemoryDevice:
		if err := a.buf.CopyToHost(out); err != nil {
			t.Fatal(err)
		}
	case cuda.MemoryHost:
		h, _ := a.buf.Bytes()
		copy(out, h)
	default:
		copy(out, a.host)
	}
	return out
}

// view places l with its lowest byte at base.
func (a *arena) view(t *testing.T, base int64, l layout.Layout, dt layout.DType) *StridedMemoryView {
	var whole *StridedMemoryView
	var err error
	u8, _ := layout.New([]int64{int64(a.size)}, nil, 1)
	if a.buf != nil {
		whole, err = FromBuffer(a.buf, u8, layout.Uint8)
	} else {
		whole, err = FromHost(a.host, u8)
	}
	if err != nil {
		t.Fatal(err)
	}
	v, err := whole.ViewAt(base-l.MinOffset()*int64(l.Itemsize()), l, dt)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func gpuSeed(t *testing.T) uint64 {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("STRIDEKIT_GPU_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (STRIDEKIT_GPU_SEED=%d replays it)", seed, seed)
	return seed
}

func TestGPURandomPairs(t *testing.T) {
	dev := testenv.NeedGPU(t)
	testenv.NeedNVRTC(t)
	n := 10000
	if testing.Short() {
		n = 300
	}
	if s := os.Getenv("STRIDEKIT_GPU_PAIRS"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	r := rand.New(rand.NewPCG(gpuSeed(t), 9))
	s := testenv.NewStream(t, dev)
	const maxView = 1 << 20
	const size = 2*maxView + 1024
	kinds := []cuda.MemoryKind{cuda.MemoryDevice, cuda.MemoryHost, cuda.MemoryPageable}
	arenas := map[cuda.MemoryKind][2]*arena{}
	for _, k := range kinds {
		arenas[k] = [2]*arena{newArena(t, dev, k, size), newArena(t, dev, k, size)}
	}
	byRoute := map[string]int{}
	byClass := map[layout.Class]int{}
	spans := 0
	failed := 0
	for i := 0; i < n && failed < 5; i++ {
		c := pairgen.Random(r, maxView)
		dk, sk := kinds[r.IntN(3)], kinds[r.IntN(3)]
		if i%4 == 0 { // a quarter device to device, the kernels' own path
			dk, sk = cuda.MemoryDevice, cuda.MemoryDevice
		}
		da, sa := arenas[dk][0], arenas[sk][1]
		dbuf := make([]byte, c.DstBuf)
		sbuf := make([]byte, c.SrcBuf)
		pairgen.Poison(dbuf)
		pairgen.Fill(r, sbuf)
		da.put(t, dbuf)
		sa.put(t, sbuf)
		dt, _ := layout.Opaque(c.Dst.Itemsize())
		dv := da.view(t, c.DstBase, c.Dst, dt)
		sv := sa.view(t, c.SrcBase, c.Src, dt)
		cp, err := dv.Explain(sv)
		if err != nil {
			t.Fatalf("pair %d %v: %v", i, c, err)
		}
		if err := dv.CopyFrom(sv, s); err != nil {
			t.Errorf("pair %d %v (%v→%v): %v", i, c, sk, dk, err)
			failed++
			continue
		}
		if err := s.Synchronize(); err != nil {
			t.Fatalf("pair %d %v: %v", i, c, err)
		}
		want := bytes.Clone(dbuf)
		naiveCopy(want[c.DstBase:], c.Dst, sbuf[c.SrcBase:], c.Src)
		got := da.get(t, int(c.DstBuf))
		if !bytes.Equal(got, want) {
			bad := 0
			for bad < len(got) && got[bad] == want[bad] {
				bad++
			}
			t.Errorf("pair %d %v (%v→%v, %v %v): first bad byte %d of %d (view from %d)", i, c, sk, dk, cp.Path, cp.Plan.Sig, bad, len(got), c.DstBase)
			failed++
			continue
		}
		byRoute[fmt.Sprintf("%v→%v", sk, dk)]++
		byClass[cp.Plan.Sig.Class]++
		if b := cp.Plan.Box; b != nil && b.Src.Holes {
			spans++
		}
	}
	total := 0
	for _, v := range byRoute {
		total += v
	}
	t.Logf("GPU pairs: %d passed, %d failed; by memory: %v; by class: %v (btile with src spans: %d)", total, failed, byRoute, byClass, spans)
}

// TestGPUConcurrent: 32 goroutines on 8 streams copy distinct views at
// once (a transpose each, device to device) and check their results.
func TestGPUConcurrent(t *testing.T) {
	dev := testenv.NeedGPU(t)
	testenv.NeedNVRTC(t)
	const streams, workers, n = 8, 32, 96
	ss := make([]*cuda.Stream, streams)
	for i := range ss {
		ss[i] = testenv.NewStream(t, dev)
	}
	l, _ := layout.Dense([]int64{n, n + 1}, 4, layout.C)
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			s := ss[w%streams]
			host := make([]float32, n*(n+1))
			for i := range host {
				host[i] = float32(w*100000 + i)
			}
			hv, _ := FromHost(host, l)
			a, err := dev.Alloc(len(host)*4, s)
			if err != nil {
				errs <- err
				return
			}
			defer a.Close()
			b, err := dev.Alloc(len(host)*4, s)
			if err != nil {
				errs <- err
				return
			}
			defer b.Close()
			av, _ := FromBuffer(a, l, layout.Float32)
			lt, _ := layout.Dense([]int64{n + 1, n}, 4, layout.C)
			bv, _ := FromBuffer(b, lt, layout.Float32)
			at, _ := av.Permute(1, 0)
			out := make([]float32, len(host))
			ov, _ := FromHost(out, lt)
			for rep := 0; rep < 5; rep++ {
				if err := av.CopyFrom(hv, s); err != nil {
					errs <- err
					return
				}
				if err := bv.CopyFrom(at, s); err != nil {
					errs <- err
					return
				}
				if err := ov.CopyFrom(bv, s); err != nil {
					errs <- err
					return
				}
				for i := range n + 1 {
					for j := range n {
						if out[i*n+j] != host[j*(n+1)+i] {
							errs <- fmt.Errorf("worker %d: out[%d][%d] = %v, want %v", w, i, j, out[i*n+j], host[j*(n+1)+i])
							return
						}
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestGPUCopyAllocs: a device copy whose kernel is cached allocates nothing.
func TestGPUCopyAllocs(t *testing.T) {
	dev := testenv.NeedGPU(t)
	testenv.NeedNVRTC(t)
	s := testenv.NewStream(t, dev)
	dst, src, srcT := transposePair(t, dev, s, 128)
	_ = dst.CopyFrom(src, s)
	if a := testing.AllocsPerRun(200, func() {
		if err := dst.CopyFrom(srcT, s); err != nil {
			t.Fatal(err)
		}
	}); a != 0 {
		t.Errorf("cached device copy allocates %v times", a)
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
}

// transposePair returns views dst, src (n×n float32 on the device) and
// srcT, src's transpose.
func transposePair(tb testing.TB, dev *cuda.Device, s *cuda.Stream, n int64) (dst, src, srcT *StridedMemoryView) {
	l, _ := layout.Dense([]int64{n, n}, 4, layout.C)
	a, err := dev.Alloc(int(n*n*4), s)
	if err != nil {
		tb.Fatal(err)
	}
	b, err := dev.Alloc(int(n*n*4), s)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { a.Close(); b.Close() })
	dst, _ = FromBuffer(a, l, layout.Float32)
	src, _ = FromBuffer(b, l, layout.Float32)
	srcT, _ = src.Permute(1, 0)
	return dst, src, srcT
}

// BenchmarkHostTransfer moves 256 MiB float32 views between pinned or
// pageable host memory and the device: contiguous (one DMA, the baseline),
// transposed and flipped (permutations of a dense buffer: one DMA and a
// device kernel), and a sliced view with step 2 (gathered on the host).
// Each reports GB/s of the view's bytes; compare against "contiguous".
func BenchmarkHostTransfer(b *testing.B) {
	const n = 8192 // 8192² float32 = 256 MiB
	dev := testenv.NeedGPU(b)
	s := testenv.NewStream(b, dev)
	l, _ := layout.Dense([]int64{n, n}, 4, layout.C)
	dbuf, err := dev.Alloc(n*n*4, s)
	if err != nil {
		b.Fatal(err)
	}
	defer dbuf.Close()
	dv, _ := FromBuffer(dbuf, l, layout.Float32)
	pin, err := dev.AllocHost(2 * n * n * 4)
	if err != nil {
		b.Fatal(err)
	}
	defer pin.Close()
	page := make([]float32, 2*n*n)
	wide, _ := layout.Dense([]int64{n, 2 * n}, 4, layout.C)
	hosts := map[string]*StridedMemoryView{}
	hosts["pinned"], _ = FromBuffer(pin, wide, layout.Float32)
	hosts["pageable"], _ = FromHost(page, wide)
	for _, mem := range []string{"pinned", "pageable"} {
		h := hosts[mem]
		whole, _ := h.ViewAt(0, l, layout.Float32)
		views := map[string]*StridedMemoryView{"contiguous": whole}
		views["transposed"], _ = whole.Permute(1, 0)
		views["flipped"], _ = whole.Slice(layout.Range{Start: layout.Omit, Stop: layout.Omit, Step: -1})
		views["slice-step2"], _ = h.Slice(layout.All(), layout.Range{Start: layout.Omit, Stop: layout.Omit, Step: 2})
		for _, name := range []string{"contiguous", "transposed", "flipped", "slice-step2"} {
			hv := views[name]
			b.Run(mem+"/"+name+"/H2D", func(b *testing.B) {
				b.SetBytes(n * n * 4)
				for i := 0; i < b.N; i++ {
					if err := dv.CopyFrom(hv, s); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run(mem+"/"+name+"/D2H", func(b *testing.B) {
				b.SetBytes(n * n * 4)
				for i := 0; i < b.N; i++ {
					if err := hv.CopyFrom(dv, s); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
