package kernels

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/stridekit/stridekit/internal/layouttest"
	"github.com/stridekit/stridekit/internal/pairgen"
	"github.com/stridekit/stridekit/internal/testenv"
	"github.com/stridekit/stridekit/kernels/jit"
	"github.com/stridekit/stridekit/layout"
	"github.com/stridekit/stridekit/runtime/cuda"
	"github.com/stridekit/stridekit/runtime/hostcopy"
)

// gpuCase is one copy to check: dst and src views of itemsize bytes.
type gpuCase struct {
	name   string
	dl, sl layout.Layout
	padD   int // bytes before the dst view's buffer (varies alignment)
	padS   int
	spec   bool       // run the kernel specialised to the plan (Bound.Specialise)
	gather bool       // plan with layout.PlanOptions.Gather
	cache  *jit.Cache // where the kernel is loaded from; nil: jit.Default
}

func randomCase(r *rand.Rand, item int) (gpuCase, error) {
	nd := 1 + r.IntN(6)
	ext := []int64{1, 2, 3, 5, 7, 16, 17, 32, 33, 64, 96}
	shape := make([]int64, nd)
	for {
		vol := int64(1)
		for k := range shape {
			shape[k] = ext[r.IntN(len(ext))]
			vol *= shape[k]
		}
		if vol*int64(item) <= 4<<20 {
			break
		}
	}
	order := func() []int { return r.Perm(nd) }
	ones := func() []int64 {
		s := make([]int64, nd)
		for k := range s {
			s[k] = 1
		}
		return s
	}
	dstep, sstep := ones(), ones()
	kind := r.IntN(6)
	var sneg []bool
	var name string
	dOrd, sOrd := order(), order()
	switch kind {
	case 0:
		name = "permute"
	case 1:
		name = "transpose2d"
		if nd >= 2 {
			sOrd = append([]int(nil), dOrd...)
			sOrd[nd-1], sOrd[nd-2] = sOrd[nd-2], sOrd[nd-1]
		}
	case 2:
		name = "slice"
		for k := range sstep {
			if r.IntN(3) == 0 {
				sstep[k] = int64(2 + r.IntN(2))
			}
		}
		if r.IntN(2) == 0 {
			dstep[r.IntN(nd)] = 2
		}
	case 3:
		name = "flip"
		sneg = make([]bool, nd)
		for k := range sneg {
			sneg[k] = r.IntN(2) == 0
		}
	case 4, 5:
		name = "broadcast"
	}
	if kind == 5 {
		name = "fill"
	}
	dl, err := layout.New(shape, pairgen.Strides(shape, dOrd, dstep, nil), item)
	if err != nil {
		return gpuCase{}, err
	}
	ss := pairgen.Strides(shape, sOrd, sstep, sneg)
	if kind == 4 {
		for k := range ss {
			if r.IntN(2) == 0 {
				ss[k] = 0
			}
		}
	}
	if kind == 5 {
		for k := range ss {
			ss[k] = 0
		}
	}
	sl, err := layout.New(shape, ss, item)
	if err != nil {
		return gpuCase{}, err
	}
	return gpuCase{name: name, dl: dl, sl: sl, padD: item * r.IntN(5), padS: item * r.IntN(5)}, nil
}

// runCase copies c on the GPU and on the host and compares the whole dst
// buffers (view and poisoned margins). It returns the plan's signature.
func runCase(t *testing.T, dev *cuda.Device, st *cuda.Stream, r *rand.Rand, c gpuCase) (layout.Signature, error) {
	const margin = 64
	nD := int(c.dl.RequiredSizeInBytes()) + c.padD + margin
	nS := int(c.sl.RequiredSizeInBytes()) + c.padS + margin
	db, err := dev.Alloc(nD, nil)
	if err != nil {
		return layout.Signature{}, err
	}
	defer db.Close()
	sb, err := dev.Alloc(nS, nil)
	if err != nil {
		return layout.Signature{}, err
	}
	defer sb.Close()
	src := make([]byte, nS)
	for i := range src {
		src[i] = byte(r.Uint32())
	}
	poison := make([]byte, nD)
	for i := range poison {
		poison[i] = byte(0xA5 ^ i*7)
	}
	if err := sb.CopyFromHost(src); err != nil {
		return layout.Signature{}, err
	}
	if err := db.CopyFromHost(poison); err != nil {
		return layout.Signature{}, err
	}
	// The uploads may still be in flight (pageable memory) and st does not
	// wait for the legacy stream: finish them first.
	if err := dev.Synchronize(); err != nil {
		return layout.Signature{}, err
	}
	dptr, sptr := db.Ptr()+cuda.DevicePtr(c.padD), sb.Ptr()+cuda.DevicePtr(c.padS)
	opt := PlanOptions(dev, dptr, sptr, c.dl.Itemsize())
	opt.Gather = c.gather
	p, err := layout.PlanCopy(c.dl, c.sl, opt)
	if err != nil {
		return layout.Signature{}, err
	}
	switch p.Sig.Class {
	case layout.ClassNone:
		return p.Sig, nil
	case layout.ClassMemcpy:
		if err := dev.CopyDtoD(dptr+cuda.DevicePtr(p.DstOffset), sptr+cuda.DevicePtr(p.SrcOffset), int(p.Bytes)); err != nil {
			return p.Sig, err
		}
	default:
		if err := launchPlanTier(dev, st, dptr, sptr, &p, c.spec, c.cache); err != nil {
			return p.Sig, fmt.Errorf("launch %v: %w", p.Sig, err)
		}
	}
	if err := st.Synchronize(); err != nil {
		return p.Sig, err
	}
	got := make([]byte, nD)
	if err := db.CopyToHost(got); err != nil {
		return p.Sig, err
	}
	want := bytes.Clone(poison)
	if err := hostcopy.Copy(want[c.padD:nD-margin], c.dl, src[c.padS:nS-margin], c.sl); err != nil {
		return p.Sig, err
	}
	if !bytes.Equal(got, want) {
		bad := 0
		for i := range got {
			if got[i] != want[i] {
				bad = i
				break
			}
		}
		return p.Sig, fmt.Errorf("%s %v: dst differs from hostcopy (first bad byte %d of %d, view starts at %d)\n dst %v\n src %v\n plan %+v",
			c.name, p.Sig, bad, nD, c.padD, c.dl, c.sl, p)
	}
	return p.Sig, nil
}

// randomCopies runs n random copies of each itemsize 1, 2, 4, 8, 16, 3, 6
// and 12 through runCase (on kernels specialised to their plans when spec
// is set), reporting the first 10 failures, and returns the copies that
// passed by class and the counts passed and failed.
func randomCopies(t *testing.T, dev *cuda.Device, st *cuda.Stream, r *rand.Rand, n int, spec bool) (counts map[string]int, pass, fail int) {
	counts = map[string]int{}
	for _, item := range []int{1, 2, 4, 8, 16, 3, 6, 12} {
		for range n {
			c, err := randomCase(r, item)
			if err != nil {
				t.Fatal(err)
			}
			c.spec = spec
			sig, err := runCase(t, dev, st, r, c)
			tally(t, counts, &pass, &fail, sig, err)
		}
	}
	return counts, pass, fail
}

// tally records the outcome of one GPU copy planned as sig: a pass, counted
// by class, or a failure (the first 10 reported).
func tally(t *testing.T, counts map[string]int, pass, fail *int, sig layout.Signature, err error) {
	t.Helper()
	if err != nil {
		if *fail++; *fail <= 10 {
			t.Error(err)
		}
		return
	}
	*pass++
	counts[sig.Class.String()]++
}

// TestGPUCopies runs random copies of every class and itemsize 1, 2, 4, 8,
// 16, 3, 6, 12 against runtime/hostcopy, with poisoned destinations.
func TestGPUCopies(t *testing.T) {
	dev := testenv.NeedGPU(t)
	st := testenv.NewStream(t, dev)
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 11))
	n := 60
	if testing.Short() {
		n = 12
	}
	counts, pass, fail := randomCopies(t, dev, st, r, n, false)
	// Fixed cases that force each class with large fast extents.
	fixed := []struct {
		shape []int64
		dOrd  []int
		sOrd  []int
		item  int
	}{
		{[]int64{300, 517}, []int{0, 1}, []int{1, 0}, 1},
		{[]int64{256, 1024}, []int{0, 1}, []int{1, 0}, 1},
		{[]int64{130, 260}, []int{0, 1}, []int{1, 0}, 2},
		{[]int64{64, 64, 48, 40}, []int{0, 1, 2, 3}, []int{3, 2, 1, 0}, 4},
		{[]int64{33, 70, 129}, []int{0, 1, 2}, []int{2, 0, 1}, 8},
		{[]int64{40, 3, 96}, []int{0, 1, 2}, []int{2, 1, 0}, 16},
		{[]int64{128, 256}, []int{0, 1}, []int{1, 0}, 3},
		{[]int64{96, 160}, []int{0, 1}, []int{1, 0}, 6},
		{[]int64{64, 80}, []int{0, 1}, []int{1, 0}, 12},
		// RGB bytes: a common run of 3 folded into 3-byte items (the
		// vector tile where aligned, else bytes in a box tile).
		{[]int64{128, 200, 3}, []int{0, 1, 2}, []int{1, 0, 2}, 1},
		{[]int64{5, 64, 96, 3}, []int{0, 1, 2, 3}, []int{0, 2, 1, 3}, 1},
		{[]int64{65, 99, 3}, []int{0, 1, 2}, []int{1, 0, 2}, 1},
		// Odd extents: single floats in a box tile, f64 in the tile.
		{[]int64{301, 299}, []int{0, 1}, []int{1, 0}, 4},
		{[]int64{301, 299}, []int{0, 1}, []int{1, 0}, 8},
	}
	for _, f := range fixed {
		one := []int64{1, 1, 1, 1}[:len(f.shape)]
		dl, _ := layout.New(f.shape, pairgen.Strides(f.shape, f.dOrd, one, nil), f.item)
		sl, _ := layout.New(f.shape, pairgen.Strides(f.shape, f.sOrd, one, nil), f.item)
		for _, pad := range [][2]int{{0, 0}, {f.item, 0}, {0, f.item}} {
			sig, err := runCase(t, dev, st, r, gpuCase{name: "fixed", dl: dl, sl: sl, padD: pad[0], padS: pad[1]})
			tally(t, counts, &pass, &fail, sig, err)
		}
	}
	var ks []string
	for k := range counts {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	summary := ""
	for _, k := range ks {
		summary += fmt.Sprintf(" %s=%d", k, counts[k])
	}
	t.Logf("GPU copies: %d passed, %d failed; by class:%s", pass, fail, summary)
}

// TestGPUGather runs random copies of every itemsize planned as gathers
// (layout.PlanOptions.Gather), generic and specialised, against
// runtime/hostcopy, with poisoned destinations.
func TestGPUGather(t *testing.T) {
	dev := testenv.NeedGPU(t)
	st := testenv.NewStream(t, dev)
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 13))
	n := 24
	if testing.Short() {
		n = 6
	}
	pass, fail, gathers := 0, 0, 0
	for _, item := range []int{1, 2, 4, 8, 16, 3, 6, 12} {
		for i := range n {
			c, err := randomCase(r, item)
			if err != nil {
				t.Fatal(err)
			}
			c.gather, c.spec = true, i%4 == 0
			sig, err := runCase(t, dev, st, r, c)
			if err != nil {
				if fail++; fail <= 10 {
					t.Error(err)
				}
				continue
			}
			pass++
			if sig.Class == layout.ClassGather {
				gathers++
			}
		}
	}
	if gathers == 0 {
		t.Errorf("no copy planned as a gather")
	}
	t.Logf("GPU gathers: %d passed (%d of them gathers), %d failed", pass, gathers, fail)
}

// permCase is a copy between dense views of shape, the source's dims
// permuted by perm.
type permCase struct {
	shape []int64
	perm  []int
}

// permPath is the kernel path a list of permCases must take, and how
// runPermCases copies them.
type permPath struct {
	name   string // gpuCase's name
	item   int    // item bytes
	pads   []int  // bytes the dst view lies into its buffer, one copy each
	padSrc bool   // the src view lies as far into its own
	cache  *jit.Cache
	want   string                 // the path, for errors
	takes  func(layout.Plan) bool // whether a plan takes the path
}

// runPermCases copies each of cases on the GPU in both tiers, at each of
// path's offsets, against runtime/hostcopy. It first plans each case at
// 256-byte aligned views and asks path.takes whether that plan goes the
// path: a case it refuses fails the test, so the path cannot go untested;
// each copy must then plan the same class and item size. Kernels come
// from path.cache (nil: jit.Default).
func runPermCases(t *testing.T, dev *cuda.Device, st *cuda.Stream, r *rand.Rand, cases []permCase, path permPath) {
	t.Helper()
	name, item, want := path.name, path.item, path.want
	for _, c := range cases {
		sl := layouttest.MustDense(t, c.shape, item, c.perm...)
		dl := layouttest.MustDense(t, c.shape, item)
		p, err := layout.PlanCopy(dl, sl, PlanOptions(dev, 256, 256, item))
		if err != nil {
			t.Fatal(err)
		}
		if !path.takes(p) {
			t.Errorf("%v perm %v: plan %v tile %v, want %s", c.shape, c.perm, p.Sig, p.Tile, want)
			continue
		}
		for _, spec := range []bool{false, true} {
			for _, pad := range path.pads {
				g := gpuCase{name: name, dl: dl, sl: sl, padD: pad, spec: spec, cache: path.cache}
				if path.padSrc {
					g.padS = pad
				}
				sig, err := runCase(t, dev, st, r, g)
				if err != nil {
					t.Error(err)
				} else if sig.Class != p.Sig.Class || sig.Itemsize != p.Sig.Itemsize {
					t.Errorf("%v perm %v, views %d bytes in: plan %v, want %s (%v)", c.shape, c.perm, pad, sig, want, p.Sig)
				}
			}
		}
	}
}

// launchPlan queues plan p between lowest bytes dst and src on st: the
// kernel of p's signature bound to p (BindPlan), or the memcpy of a memcpy
// plan. Tests use it for plans they made or altered themselves.
func launchPlan(dev *cuda.Device, st *cuda.Stream, dst, src cuda.DevicePtr, p *layout.Plan) error {
	return launchPlanTier(dev, st, dst, src, p, false, nil)
}

// launchPlanTier is launchPlan on the kernel specialised to p when spec is
// set (it checks that the specialised kernel is the one launched).
func launchPlanTier(dev *cuda.Device, st *cuda.Stream, dst, src cuda.DevicePtr, p *layout.Plan, spec bool, cache *jit.Cache) error {
	switch p.Sig.Class {
	case layout.ClassNone:
		return nil
	case layout.ClassMemcpy:
		return dev.MemcpyAsync(dst+cuda.DevicePtr(p.DstOffset), src+cuda.DevicePtr(p.SrcOffset), int(p.Bytes), st)
	}
	if cache == nil {
		cache = jit.Default
	}
	fn, k, err := cache.Kernel(dev, p.Sig)
	if err != nil {
		return err
	}
	b, err := BindPlan(p, fn, k.Name, k.Knobs)
	if err != nil {
		return err
	}
	if spec {
		if err := b.Specialise(); err != nil {
			return err
		}
		if b.Tier() != TierSpecialised || b.Running() == b.Kernel {
			return fmt.Errorf("specialised %v: tier %v, running %s", p.Sig, b.Tier(), b.Running())
		}
	}
	return b.Enqueue(st, dst, src)
}
