package dist

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/stridekit/stridekit/layout"
	"github.com/stridekit/stridekit/runtime/memview"
)

// The reference the reshard tests check against is no tensor at all: the
// global tensor is the function pattern, which gives every byte of every
// element from the element's global index. Source local views are filled
// by writing their bytes directly (index arithmetic on the strides, not
// memview), and destination local views are checked the same way, so a
// bug in the planner or in the copies cannot hide behind itself.

// fataler is what the helpers need of a *testing.T or a *rapid.T.
type fataler interface {
	Helper()
	Fatalf(format string, args ...any)
}

// pattern returns byte j of the element at global linear index g (C
// order) of the tensor of the given seed: never 0, which marks bytes no
// copy may have written.
func pattern(seed uint64, g int64, j int) byte {
	h := seed ^ uint64(g)*0x9e3779b97f4a7c15 ^ uint64(j)*0xc2b2ae3d27d4eb4f
	h ^= h >> 31
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	return byte(1 + h%255)
}

// hostLocal is a local view over a byte slice the test reads and writes
// directly: the element at index idx sits at byte off + Σ idx·strides ·
// itemsize of buf.
type hostLocal struct {
	buf  []byte
	off  int64 // byte of the element at index 0
	l    layout.Layout
	view *memview.StridedMemoryView
}

// newLocal lays out a block of the given shape: dense C order, or with
// random dims order, padding, reversed dims, and a slice that starts a few
// bytes before the view and ends after it.
func newLocal(rng *rand.Rand, shape []int64, dt layout.DType, random bool) (*hostLocal, error) {
	n, item := len(shape), int64(dt.Itemsize())
	st := make([]int64, n)
	perm := make([]int, n)
	for i := range perm {
		perm[i] = i
	}
	var front, back int64
	acc := int64(1)
	if random {
		perm = rng.Perm(n)
		acc = int64(1 + rng.IntN(2))
		front, back = int64(rng.IntN(5)), int64(rng.IntN(5))
	}
	for k := n - 1; k >= 0; k-- {
		d := perm[k]
		st[d] = acc
		if random && rng.IntN(3) == 0 {
			st[d] = -acc
		}
		pad := int64(0)
		if random && rng.IntN(2) == 0 {
			pad = int64(rng.IntN(3))
		}
		acc *= max(shape[d], 1) + pad
	}
	l, err := layout.New(shape, st, int(item))
	if err != nil {
		return nil, err
	}
	size := front + l.RequiredSizeInBytes() + back
	buf := make([]byte, size)
	raw, err := memview.FromHost(buf, mustLayout(layout.New([]int64{size}, nil, 1)))
	if err != nil {
		return nil, err
	}
	off := front - l.MinOffset()*item
	v, err := raw.ViewAt(off, l, dt)
	if err != nil {
		return nil, err
	}
	return &hostLocal{buf: buf, off: off, l: l, view: v}, nil
}

func mustLayout(l layout.Layout, err error) layout.Layout {
	if err != nil {
		panic(err)
	}
	return l
}

// each calls f with every index of block b in C order, the global linear
// index of the element and its byte position in h.
func (h *hostLocal) each(shape []int64, b Block, f func(g, pos int64)) {
	item := int64(h.l.Itemsize())
	st := h.l.Strides()
	bs := b.Shape()
	if b.Empty() {
		return
	}
	idx := make([]int64, len(bs))
	for {
		var g, o int64
		for d := range idx {
			g = g*shape[d] + b[d].Lo + idx[d]
			o += idx[d] * st[d]
		}
		f(g, h.off+o*item)
		k := len(idx) - 1
		for ; k >= 0; k-- {
			if idx[k]++; idx[k] < bs[k] {
				break
			}
			idx[k] = 0
		}
		if k < 0 {
			return
		}
	}
}

// fill writes the pattern of block b into h, and junk into the bytes
// between its elements.
func (h *hostLocal) fill(seed uint64, shape []int64, b Block) {
	for i := range h.buf {
		h.buf[i] = byte(0xA5 ^ i)
	}
	item := h.l.Itemsize()
	h.each(shape, b, func(g, pos int64) {
		for j := range item {
			h.buf[pos+int64(j)] = pattern(seed, g, j)
		}
	})
}

// check reports the first element of block b that is not the pattern,
// or a byte outside the view's elements that is not 0 (was written).
func (h *hostLocal) check(seed uint64, shape []int64, b Block) error {
	item := h.l.Itemsize()
	touched := make([]bool, len(h.buf))
	var err error
	h.each(shape, b, func(g, pos int64) {
		for j := range item {
			p := pos + int64(j)
			touched[p] = true
			if want := pattern(seed, g, j); h.buf[p] != want && err == nil {
				err = fmt.Errorf("element %d (global index) byte %d at %d: got %#x, want %#x", g, j, p, h.buf[p], want)
			}
		}
	})
	for p, t := range touched {
		if !t && h.buf[p] != 0 && err == nil {
			err = fmt.Errorf("byte %d outside the view's elements written (%#x)", p, h.buf[p])
		}
	}
	return err
}

// reshardCase is one reshard to run over a host group and check.
type reshardCase struct {
	dt       layout.DType
	src, dst Sharding
	seed     uint64
	random   bool // random local layouts (else dense C)
}

func (c reshardCase) String() string {
	return fmt.Sprintf("%v %v → %v (seed %d)", c.dt, c.src, c.dst, c.seed)
}

// run reshards c over a host group, one goroutine per rank, and checks
// every rank's destination against the pattern and its source unchanged.
// It returns the ranks' plans.
func (c reshardCase) run(t fataler) []Plan {
	t.Helper()
	n := c.src.mesh.Size()
	rng := rand.New(rand.NewPCG(c.seed, 7))
	shape := c.src.shape
	srcs, dsts := make([]*hostLocal, n), make([]*hostLocal, n)
	sv, dv := make([]*DistView, n), make([]*DistView, n)
	for r := range n {
		sb, _ := c.src.BlockOf(r)
		db, _ := c.dst.BlockOf(r)
		var err error
		if srcs[r], err = newLocal(rng, sb.Shape(), c.dt, c.random); err != nil {
			t.Fatalf("%v: rank %d source: %v", c, r, err)
		}
		if dsts[r], err = newLocal(rng, db.Shape(), c.dt, c.random); err != nil {
			t.Fatalf("%v: rank %d destination: %v", c, r, err)
		}
		srcs[r].fill(c.seed, shape, sb)
		if sv[r], err = NewDistView(c.src, c.dt, r, srcs[r].view); err != nil {
			t.Fatalf("%v: rank %d: %v", c, r, err)
		}
		if dv[r], err = NewDistView(c.dst, c.dt, r, dsts[r].view); err != nil {
			t.Fatalf("%v: rank %d: %v", c, r, err)
		}
	}
	before := make([][]byte, n)
	for r := range n {
		before[r] = append([]byte(nil), srcs[r].buf...)
	}
	plans, err := runGroup(n, dv, sv)
	if err != nil {
		t.Fatalf("%v: %v", c, err)
	}
	for r := range n {
		if err := dsts[r].check(c.seed, shape, dv[r].block); err != nil {
			t.Fatalf("%v: rank %d destination (layout %v, block %v): %v\nplan %v", c, r, dsts[r].l, dv[r].block, err, plans[r])
		}
		if string(before[r]) != string(srcs[r].buf) {
			t.Fatalf("%v: rank %d: the source changed", c, r)
		}
	}
	return plans
}

// runGroup builds a host group of n ranks and runs, on each in its own
// goroutine, NewReshard and Run, within a deadline; it returns their plans
// or the first error.
func runGroup(n int, dst, src []*DistView) ([]Plan, error) {
	ts, err := NewHostGroup(n)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	plans := make([]Plan, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Go(func() {
			rs, err := NewReshard(ts[r], dst[r], src[r])
			if err != nil {
				errs[r] = err
				ts[r].(*HostTransport).Abort(err)
				return
			}
			defer rs.Close()
			plans[r] = rs.Plan()
			errs[r] = rs.Run(ctx, nil)
		})
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			return plans, fmt.Errorf("rank %d: %w", r, err)
		}
	}
	return plans, nil
}

// mustSharding is NewSharding for arguments known to be valid.
func mustSharding(t fataler, shape []int64, m Mesh, spec Spec) Sharding {
	t.Helper()
	s, err := NewSharding(shape, m, spec)
	if err != nil {
		t.Fatalf("NewSharding(%v, %v, %v): %v", shape, m, spec, err)
	}
	return s
}

// mustMesh is NewMesh for sizes known to be valid.
func mustMesh(t fataler, sizes ...int) Mesh {
	t.Helper()
	m, err := NewMesh(sizes...)
	if err != nil {
		t.Fatalf("NewMesh(%v): %v", sizes, err)
	}
	return m
}
