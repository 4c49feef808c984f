package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stridekit/stridekit/internal/layouttest"
	"github.com/stridekit/stridekit/internal/pairgen"
	"github.com/stridekit/stridekit/internal/tilegeom"
	"github.com/stridekit/stridekit/layout"
)

// TestEmulatedLoadGrain copies, on the CPU and in both tiers, box tiles
// (4 KiB) of copies of 1 MiB or more (smaller ones stay in words) whose src
// slots are laid out at 16-byte chunks
// (layout.PlanOptions.LoadGrain 16; the specialised kernel stages them
// with 16-byte copies, loadChunks) and at 4-byte words: items of 1 to 16
// bytes, forward and reversed src runs, ragged tiles, views at several
// addresses modulo 16, and 6 random permutations of up to 4 MiB that
// the planner chunks. A plan asked for words must be
// at words, and some plans of both groups must be at chunks (the planner
// takes them where the store phase keeps its banks), so the chunk path is
// known to run; a chunk landing one byte off its slot made it fail.
func TestEmulatedLoadGrain(t *testing.T) {
	r := emuRand(t, 16)
	chunks := 0
	for _, c := range []struct {
		shape []int64
		perm  []int
		item  int
		flip  bool // src's fastest dim reversed
	}{
		{[]int64{1000, 1100}, []int{1, 0}, 1, false},
		{[]int64{21, 50, 1037}, []int{2, 0, 1}, 1, true},
		{[]int64{60, 50, 7, 55}, []int{2, 3, 0, 1}, 1, false},
		{[]int64{70, 90, 11, 9}, []int{3, 1, 0, 2}, 2, false},
		{[]int64{23, 45, 530}, []int{2, 1, 0}, 2, true},
		{[]int64{170, 230, 9}, []int{2, 0, 1}, 3, false},
		{[]int64{61, 190, 29}, []int{2, 0, 1}, 4, false},
		{[]int64{9, 40, 10, 60}, []int{1, 3, 2, 0}, 8, true},
		{[]int64{130, 60, 11}, []int{2, 0, 1}, 12, false},
		{[]int64{50, 70, 9, 3}, []int{3, 0, 2, 1}, 16, false},
	} {
		p, err := layout.Dense(c.shape, c.item, layout.Perm(c.perm...))
		if err != nil {
			t.Fatal(err)
		}
		ss := p.Strides()
		if c.flip {
			ss[len(ss)-1] = -ss[len(ss)-1]
		}
		src := layouttest.MustNew(t, c.shape, ss, c.item)
		dst := layouttest.MustNew(t, c.shape, nil, c.item)
		for base := int64(0); base < 16; base += 5 {
			pair := pairgen.Pair{Kind: "loadgrain", Dst: dst, Src: src, DstBase: 3 * base, SrcBase: base,
				DstBuf: 3*base + dst.RequiredSizeInBytes(), SrcBuf: base + src.RequiredSizeInBytes()}
			for _, g := range []int{tilegeom.ChunkGrain, tilegeom.WordGrain} {
				chunks += emuGrain(t, r, pair, g)
			}
		}
	}
	if chunks == 0 {
		t.Error("no case planned at 16-byte chunks")
	}
	n := 0
	for tries := 0; n < 6 && tries < 200; tries++ {
		c := bigPerm(t, r)
		opt := PlanOptions(nil, 0x10000+uintptrOf(int(c.DstBase%256)), 0x10000+uintptrOf(int(c.SrcBase%256)), c.Dst.Itemsize())
		opt.TileBytes, opt.LoadGrain = 4<<10, tilegeom.ChunkGrain
		if p, err := layout.PlanCopy(c.Dst, c.Src, opt); err == nil && p.Box != nil && p.Box.Grain == tilegeom.ChunkGrain {
			emuGrain(t, r, c, tilegeom.ChunkGrain)
			n++
		}
	}
	if n < 6 {
		t.Errorf("only %d random permutations planned at 16-byte chunks", n)
	}
}

// bigPerm draws a random permutation of 3 to 5 dims moving 1-2 MiB of
// items of 1, 2, 3, 4 or 8 bytes, both views at a random offset.
func bigPerm(t *testing.T, r *rand.Rand) pairgen.Pair {
	item := []int{1, 2, 3, 4, 8}[r.IntN(5)]
	n := 3 + r.IntN(3)
	shape := make([]int64, n)
	vol := int64(1)
	for k := range shape {
		shape[k] = int64(2 + r.IntN(40))
		vol *= shape[k]
	}
	for k := 0; vol*int64(item) < 1<<20; k = (k + 1) % n {
		vol = vol / shape[k] * (shape[k] + 7)
		shape[k] += 7
	}
	src, err := layout.Dense(shape, item, layout.Perm(r.Perm(n)...))
	if err != nil {
		t.Fatal(err)
	}
	dst := layouttest.MustNew(t, shape, nil, item)
	db, sb := int64(item*r.IntN(16)), int64(item*r.IntN(16))
	return pairgen.Pair{Kind: "bigperm", Dst: dst, Src: src, DstBase: db, SrcBase: sb,
		DstBuf: db + dst.RequiredSizeInBytes(), SrcBuf: sb + src.RequiredSizeInBytes()}
}

// emuGrain copies pair in both tiers with 4 KiB box tiles at load grain
// g, and returns how many of the copies' plans were laid out at 16-byte
// chunks. A plan at LoadGrain 4 must be at words.
func emuGrain(t *testing.T, r *rand.Rand, c pairgen.Pair, g int) int {
	t.Helper()
	n := 0
	for _, spec := range []bool{false, true} {
		p := emuCopyWith(t, r, c, spec, func(o *layout.PlanOptions) { o.TileBytes, o.LoadGrain = 4<<10, g })
		if p.Box == nil {
			continue
		}
		if p.Box.Grain == tilegeom.ChunkGrain {
			n++
		} else if g == tilegeom.WordGrain && p.Box.Grain != tilegeom.WordGrain {
			t.Fatalf("%v: grain %d at LoadGrain %d", c, p.Box.Grain, g)
		}
	}
	if testing.Verbose() {
		fmt.Printf("%v: grain %d: %d chunked\n", c.Kind, g, n)
	}
	return n
}
