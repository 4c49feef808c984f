package kernels

import (
	"bytes"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stridekit/stridekit/gen"
	"github.com/stridekit/stridekit/internal/cudaemu"
	"github.com/stridekit/stridekit/internal/layouttest"
	"github.com/stridekit/stridekit/internal/pairgen"
	"github.com/stridekit/stridekit/kernels/jit"
	"github.com/stridekit/stridekit/layout"
	"github.com/stridekit/stridekit/runtime/cuda"
	"github.com/stridekit/stridekit/runtime/hostcopy"
)

// emuCopy runs pair c through the planner, gen.Pack and the kernel its plan
// names (specialised to the plan's argument block when spec is set),
// emulated on the CPU (internal/cudaemu), and compares the dst span with
// runtime/hostcopy's on a poisoned buffer. smCount is small so that the
// looping grids take several trips.
func emuCopy(t *testing.T, r *rand.Rand, c pairgen.Pair, spec bool) layout.Signature {
	t.Helper()
	return emuCopyTiles(t, r, c, spec, []int{1 << 10, 4 << 10, 16 << 10}[r.IntN(3)]).Sig
}

// emuCopyTiles is emuCopy with box tiles of up to tileBytes; it returns the
// plan.
func emuCopyTiles(t *testing.T, r *rand.Rand, c pairgen.Pair, spec bool, tileBytes int) layout.Plan {
	t.Helper()
	return emuCopyWith(t, r, c, spec, func(o *layout.PlanOptions) { o.TileBytes = tileBytes })
}

// emuRandomTries bounds the random pairs emuRandomOn plans. Some paths
// are rare: about 3 pairs in 10,000 plan as vector tiles, so the 20,000
// tries this once was found fewer than 4 about one run in seven (seed
// 1795901324459066717 replays one). Planning 400,000 pairs takes about a
// second on 2 cores.
const emuRandomTries = 400000

// emuRandomOn copies, as emuCopyTiles does with tiles of 4 KiB, want
// random pairs whose plans takes accepts (the i-th of them specialised
// where spec(i)) and returns how many it copied; fewer in emuRandomTries
// tries fail the test (path names what takes looks for).
func emuRandomOn(t *testing.T, r *rand.Rand, want int, path string, takes func(pairgen.Pair, layout.Plan) bool, spec func(i int) bool) int {
	t.Helper()
	n := 0
	for tries := 0; n < want && tries < emuRandomTries; tries++ {
		c := pairgen.Random(r, 48<<10)
		opt := PlanOptions(nil, 0x10000+uintptrOf(int(c.DstBase%256)), 0x10000+uintptrOf(int(c.SrcBase%256)), c.Dst.Itemsize())
		opt.TileBytes = 4 << 10
		p, err := layout.PlanCopy(c.Dst, c.Src, opt)
		if err != nil || !takes(c, p) {
			continue
		}
		emuCopyTiles(t, r, c, spec(n), 4<<10)
		n++
	}
	if n < want {
		t.Errorf("only %d random pairs took %s", n, path)
	}
	return n
}

// emuCopyWith is emuCopy with the plan options set sets; it returns the
// plan.
func emuCopyWith(t *testing.T, r *rand.Rand, c pairgen.Pair, spec bool, set func(*layout.PlanOptions)) layout.Plan {
	t.Helper()
	dmis, smis := int(c.DstBase%256), int(c.SrcBase%256)
	opt := PlanOptions(nil, 0x10000+uintptrOf(dmis), 0x10000+uintptrOf(smis), c.Dst.Itemsize())
	set(&opt)
	p, err := layout.PlanCopy(c.Dst, c.Src, opt)
	if err != nil {
		t.Fatalf("%v: %v", c, err)
	}
	if p.Sig.Class == layout.ClassNone || p.Sig.Class == layout.ClassMemcpy {
		return p
	}
	emuBudget(t)
	src := make([]byte, c.Src.RequiredSizeInBytes())
	pairgen.Fill(r, src)
	got := make([]byte, c.Dst.RequiredSizeInBytes())
	pairgen.Poison(got)
	want := bytes.Clone(got)
	if err := hostcopy.Copy(want, c.Dst, src, c.Src); err != nil {
		t.Fatalf("%v: hostcopy: %v", c, err)
	}
	k, err := jit.For(p.Sig, 90)
	if err != nil {
		t.Fatal(err)
	}
	args := make([]byte, gen.ArgsSize(p.Sig))
	l, err := gen.Pack(p.Sig, k.Knobs, &p, 1+r.IntN(3), args)
	if err != nil {
		t.Fatalf("%v: %v", c, err)
	}
	name, source := k.Name, k.Source
	if spec {
		if name, source, err = gen.SpecialisedSource(p.Sig, k.Knobs, args); err != nil {
			t.Fatal(err)
		}
	}
	if err := cudaemu.Launch(source, name, l, args, got, p.DstOffset, dmis, src, p.SrcOffset, smis); err != nil {
		t.Fatalf("%v (plan %+v): %v", c, p, err)
	}
	if !bytes.Equal(got, want) {
		bad := 0
		for bad < len(got) && got[bad] == want[bad] {
			bad++
		}
		t.Fatalf("%v\nplan %v shape %v ds %v ss %v tile %v offsets %d/%d\nfirst bad byte %d of %d: got %#x want %#x",
			c, p.Sig, p.Shape, p.DstStrides, p.SrcStrides, p.Tile, p.DstOffset, p.SrcOffset, bad, len(got), got[bad], want[bad])
	}
	return p
}

func uintptrOf(mis int) cuda.DevicePtr { return cuda.DevicePtr(mis) }

// emuShortCopies is how many copies an emulated test makes under -short
// before it stops, skipped and saying so (TestEmulatedKernels, which takes
// its own samples, aside): each copy runs a kernel compiled by the host's
// C++ compiler, and the focused tests' cases took about 500 s on 2 cores,
// where the quick run is meant to take seconds. Their first cases still
// run; the full suite, which CI runs, runs them all.
const emuShortCopies = 2

// emuCopies counts each top-level test's emulated copies (emuBudget),
// from its emuRand.
var emuCopies struct {
	sync.Mutex
	n map[string]int
}

// emuBudget, called before each emulated kernel (copies that plan as a
// memcpy or nothing run none and are not counted), skips the rest of the test
// under -short once it has made emuShortCopies copies.
func emuBudget(t *testing.T) {
	t.Helper()
	name, _, _ := strings.Cut(t.Name(), "/")
	if !testing.Short() || name == "TestEmulatedKernels" {
		return
	}
	emuCopies.Lock()
	if emuCopies.n == nil {
		emuCopies.n = map[string]int{}
	}
	emuCopies.n[name]++
	k := emuCopies.n[name]
	emuCopies.Unlock()
	if k > emuShortCopies {
		t.Skipf("-short: stopped after %d emulated copies (the full suite runs every case)", emuShortCopies)
	}
}

// emuRand skips the test where no C++ compiler can run the kernels (fails
// it under STRIDEKIT_REQUIRE_NVRTC: CI has one, so the test must run there)
// and returns its random source, seeded by the clock or STRIDEKIT_EMU_SEED
// (logged, so a run can be replayed) with stream.
func emuRand(t *testing.T, stream uint64) *rand.Rand {
	t.Helper()
	if err := cudaemu.Available(); err != nil {
		if os.Getenv("STRIDEKIT_REQUIRE_NVRTC") == "1" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("STRIDEKIT_EMU_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (STRIDEKIT_EMU_SEED=%d replays it)", seed, seed)
	emuCopies.Lock()
	delete(emuCopies.n, t.Name()) // a new run of the test (-count) starts its budget again
	emuCopies.Unlock()
	return rand.New(rand.NewPCG(seed, stream))
}

// TestEmulatedSpecialised runs random pairs of every kind through their
// kernels specialised to their plans (gen.SpecialisedSource) on the CPU.
// Each is a compile of its own, so there are fewer than in
// TestEmulatedKernels.
func TestEmulatedSpecialised(t *testing.T) {
	r := emuRand(t, 4)
	classes := map[layout.Class]int{}
	for _, kind := range pairgen.Kinds {
		for range 2 {
			sig := emuCopy(t, r, pairgen.RandomKind(r, 48<<10, kind), true)
			classes[sig.Class]++
		}
	}
	t.Logf("classes: %v", classes)
}

// TestEmulatedGather runs random pairs of every kind planned with
// PlanOptions.Gather through their kernels, generic and specialised, on
// the CPU: what is not a memcpy, a broadcast or a fill must plan as
// ClassGather and copy right.
func TestEmulatedGather(t *testing.T) {
	r := emuRand(t, 6)
	classes := map[layout.Class]int{}
	gather := func(o *layout.PlanOptions) { o.Gather = true }
	for _, kind := range pairgen.Kinds {
		for i := range 4 {
			p := emuCopyWith(t, r, pairgen.RandomKind(r, 48<<10, kind), i == 0, gather)
			switch p.Sig.Class {
			case layout.ClassElementwise, layout.ClassTile, layout.ClassBoxTile:
				t.Fatalf("%v planned with Gather", p.Sig)
			}
			classes[p.Sig.Class]++
		}
	}
	if classes[layout.ClassGather] == 0 {
		t.Fatalf("no pair planned as a gather: %v", classes)
	}
	t.Logf("classes: %v", classes)
}

// TestEmulatedChosenBoxTile copies, on the CPU, a float64 6-d permutation
// of 1.1 MiB whose box tile is not the planner's first candidate (chooseTile
// keeps the candidate that moves the fewest sectors; layout's
// TestChooseTileSectors has the full-size case): [6 1 9 1 5 9] rather than
// [6 1 9 1 3 9], whose extent 3 of 5 leaves ragged tiles.
func TestEmulatedChosenBoxTile(t *testing.T) {
	r := emuRand(t, 5)
	shape := []int64{6, 2, 2, 17, 8, 5, 9}
	dst := layouttest.MustNew(t, shape, []int64{24480, 12240, 6120, 360, 45, 9, 1}, 8)
	src := layouttest.MustNew(t, shape, []int64{1, 3264, 1632, 6, 102, 16320, 16320 * 5}, 8)
	c := pairgen.Pair{Kind: "chosen-tile", Dst: dst, Src: src, DstBuf: dst.RequiredSizeInBytes(), SrcBuf: src.RequiredSizeInBytes()}
	for _, spec := range []bool{false, true} {
		p := emuCopyTiles(t, r, c, spec, 24<<10)
		if p.Sig.Class != layout.ClassBoxTile || !slices.Equal(p.Tile, []int64{6, 1, 9, 1, 5, 9}) {
			t.Fatalf("plan %v tile %v, want a box tile [6 1 9 1 5 9]", p.Sig, p.Tile)
		}
	}
}

// TestEmulatedKernels runs random pairs of every kind through their kernels
// on the CPU. The seed is printed; STRIDEKIT_EMU_SEED replays one.
func TestEmulatedKernels(t *testing.T) {
	r := emuRand(t, 3)
	n := 12
	if testing.Short() {
		n = 3
	}
	classes := map[layout.Class]int{}
	for _, kind := range pairgen.Kinds {
		for i := 0; i < n; i++ {
			sig := emuCopy(t, r, pairgen.RandomKind(r, 48<<10, kind), false)
			classes[sig.Class]++
		}
	}
	t.Logf("classes: %v", classes)
	if classes[layout.ClassBoxTile] == 0 {
		t.Error("no box-tile plan among the pairs")
	}
}

// TestEmulatedRunSteps copies, on the CPU and in both tiers, permutations
// whose box tiles (4 KiB) give the run loops of loadWords and storeElems
// each shape of work: runs shorter than their lanes (only the last step),
// runs of one to three steps and a last partial one, runs of four steps and
// more (the unrolled groups), one run for the whole block, 2-byte items and
// a reversed source. When written, the dst runs were 82, 429, 29, 27, 1769,
// 134 and 134 elements long and the src runs 3280, 231, 100, 99, 61, 46 and
// 46; what the test asserts is the copy. Breaking the last step of
// storeElems made it fail.
func TestEmulatedRunSteps(t *testing.T) {
	r := emuRand(t, 6)
	for _, c := range []struct {
		shape []int64
		perm  []int
		item  int
		flip  bool
	}{
		{[]int64{40, 163}, []int{1, 0}, 1, false},
		{[]int64{7, 9, 11, 13}, []int{3, 1, 0, 2}, 1, false},
		{[]int64{300, 170}, []int{1, 0}, 1, false},
		{[]int64{5, 197, 131}, []int{0, 2, 1}, 1, false},
		{[]int64{61, 19, 29}, []int{2, 0, 1}, 2, false},
		{[]int64{23, 45, 67}, []int{2, 1, 0}, 1, false},
		{[]int64{23, 45, 67}, []int{2, 1, 0}, 1, true},
	} {
		emuPermBoxTiles(t, r, "run-steps", c.shape, c.perm, c.item, c.flip)
	}
}

// emuPermBoxTiles is emuBoxTiles of a src that permutes a dense view of
// shape by perm, its last dim reversed where flip.
func emuPermBoxTiles(t *testing.T, r *rand.Rand, what string, shape []int64, perm []int, item int, flip bool) {
	t.Helper()
	p, err := layout.Dense(shape, item, layout.Perm(perm...))
	if err != nil {
		t.Fatal(err)
	}
	ss := p.Strides()
	if flip {
		ss[len(ss)-1] = -ss[len(ss)-1]
	}
	emuBoxTiles(t, r, what, shape, ss, item)
}

// emuBoxTiles copies, in both tiers with box tiles of 4 KiB, a dense dst of
// shape from a src of strides ss (in items of item bytes), and fails the
// test unless the plan is a box tile.
func emuBoxTiles(t *testing.T, r *rand.Rand, what string, shape, ss []int64, item int) {
	t.Helper()
	src := layouttest.MustNew(t, shape, ss, item)
	dst := layouttest.MustNew(t, shape, nil, item)
	pair := pairgen.Pair{Kind: what, Dst: dst, Src: src, DstBuf: dst.RequiredSizeInBytes(), SrcBuf: src.RequiredSizeInBytes()}
	for _, spec := range []bool{false, true} {
		if p := emuCopyTiles(t, r, pair, spec, 4<<10); p.Sig.Class != layout.ClassBoxTile {
			t.Fatalf("%v: plan %v, want a box tile", pair, p.Sig)
		}
	}
}

// storeCase is a fixed case of an emulated test of one store path: the
// views stepViews makes of it.
type storeCase struct {
	item  int
	shape []int64
	perm  []int
	step  int64 // src stride multiplier (a strided src run)
	flipD bool  // dst's fastest dim reversed
}

// emuStoreCases copies each of cases on the CPU with its dst view 0 to 3
// bytes into its buffer (where that keeps the item's natural alignment),
// in each of tiers (true: specialised), through tiles of tileBytes() bytes,
// and fails a copy whose plan does not take the path (takes, named path).
// It returns the copies made.
func emuStoreCases(t *testing.T, r *rand.Rand, path string, cases []storeCase, tiers []bool, tileBytes func() int, takes func(layout.Plan) bool) int {
	t.Helper()
	used := 0
	for _, c := range cases {
		dst, src := stepViews(t, c.shape, c.perm, c.item, c.step, c.flipD)
		for base := range int64(4) {
			if base%int64(c.item&-c.item) != 0 {
				continue // below the item's natural alignment: planned as bytes
			}
			for _, spec := range tiers {
				pair := pairgen.Pair{Kind: path, Dst: dst, Src: src, DstBase: base, DstBuf: dst.RequiredSizeInBytes() + base, SrcBuf: src.RequiredSizeInBytes()}
				p := emuCopyTiles(t, r, pair, spec, tileBytes())
				if !takes(p) {
					t.Errorf("%v: plan %v tile %v does not take the %s", pair, p.Sig, p.Tile, path)
					continue
				}
				used++
			}
		}
	}
	return used
}

// stepViews returns a dense dst view of shape in items of item bytes, its
// fastest dim reversed where flipD, and a src view permuted by perm whose
// strides are step times a dense one's (strided src runs where step > 1):
// the views of the emulated tests of one store path.
func stepViews(t *testing.T, shape []int64, perm []int, item int, step int64, flipD bool) (dst, src layout.Layout) {
	t.Helper()
	ss := layouttest.MustDense(t, shape, item, perm...).Strides()
	for i := range ss {
		ss[i] *= step
	}
	ds := layouttest.MustNew(t, shape, nil, item).Strides()
	if flipD {
		n := len(ds) - 1
		ds[n] = -ds[n]
	}
	return layouttest.MustNew(t, shape, ds, item), layouttest.MustNew(t, shape, ss, item)
}
