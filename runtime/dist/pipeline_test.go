package dist

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stridekit/stridekit/layout"
	"pgregory.net/rapid"
)

// TestChunkOf: the chunks of a box cut its first dim of more than one
// index into near-equal parts whose images lie back to back in the box's
// image; a box with no such dim is one chunk.
func TestChunkOf(t *testing.T) {
	for _, c := range []struct {
		box  Block
		n    int
		want []string
	}{
		{Block{{2, 3}, {0, 7}, {1, 4}}, 3, []string{"[2:3, 0:2, 1:4]", "[2:3, 2:4, 1:4]", "[2:3, 4:7, 1:4]"}},
		{Block{{0, 2}, {0, 5}}, 4, []string{"", "[0:1, 0:5]", "", "[1:2, 0:5]"}},
		{Block{{3, 4}, {5, 6}}, 3, []string{"[3:4, 5:6]", "", ""}},
		{Block{{0, 9}}, 1, []string{"[0:9]"}},
	} {
		bytes := c.box.Volume() * 4
		var at int64
		for i, want := range c.want {
			sub, off, n := chunkOf(c.box, bytes, i, c.n)
			got := ""
			if n > 0 {
				got = sub.String()
			}
			if got != want || (n > 0 && (off != at || n != sub.Volume()*4)) {
				t.Errorf("chunk %d of %d of %v: %s at %d, %d bytes; want %s at %d", i, c.n, c.box, got, off, n, want, at)
			}
			at += n
		}
		if at != bytes {
			t.Errorf("chunks of %v: %d bytes, want %d", c.box, at, bytes)
		}
	}
}

// TestReshardChunks: a reshard cuts its exchange into chunks of about 8 MiB
// of the tensor per rank, 4 at most, or as $STRIDEKIT_RESHARD_CHUNKS says.
func TestReshardChunks(t *testing.T) {
	for _, c := range []struct {
		bytes int64
		ranks int
		want  int
	}{{1 << 20, 2, 1}, {16 << 20, 2, 1}, {17 << 20, 2, 2}, {64 << 20, 2, 4}, {1 << 40, 8, 4}, {1 << 30, 1024, 1}} {
		if got := reshardChunks(c.bytes, c.ranks); got != c.want {
			t.Errorf("reshardChunks(%d, %d) = %d, want %d", c.bytes, c.ranks, got, c.want)
		}
	}
	t.Setenv("STRIDEKIT_RESHARD_CHUNKS", "5")
	if got := reshardChunks(1<<20, 2); got != 5 {
		t.Errorf("with STRIDEKIT_RESHARD_CHUNKS=5: %d chunks", got)
	}
}

// TestReshardStaged reshards as TestReshardProperty does, rows to columns
// and 4-d tensors, with the exchange cut into 2, 3 and 5 stages: the
// chunks of every box must land where the whole box would. The host
// transport runs the stages one after the other; a device one overlaps
// them.
func TestReshardStaged(t *testing.T) {
	for _, n := range []int{2, 3, 5} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			t.Setenv("STRIDEKIT_RESHARD_CHUNKS", fmt.Sprint(n))
			m := mustMesh(t, 2)
			rows := mustSharding(t, []int64{6, 5}, m, Spec{{0}})
			cols := mustSharding(t, []int64{6, 5}, m, Spec{nil, {0}})
			if got := stagesOf(t, rows, cols); got != n {
				t.Fatalf("%d stages, want %d", got, n)
			}
			reshardCase{dt: layout.Float32, src: rows, dst: cols, seed: uint64(n), random: true}.run(t)
			m8 := mustMesh(t, 2, 2, 2)
			reshardCase{dt: layout.Uint8, src: mustSharding(t, []int64{4, 3, 5, 6}, m8, Spec{{0}, {1}, {2}}),
				dst: mustSharding(t, []int64{4, 3, 5, 6}, m8, Spec{nil, {2}, nil, {0, 1}}), seed: 9, random: true}.run(t)
			rapid.Check(t, func(t *rapid.T) {
				ndim := rapid.IntRange(1, 4).Draw(t, "ndim")
				shape := make([]int64, ndim)
				for d := range shape {
					shape[d] = rapid.Int64Range(1, 9).Draw(t, "extent")
				}
				k := rapid.IntRange(1, 8).Draw(t, "ranks")
				sm, dm := drawMesh(t, k, "src mesh"), drawMesh(t, k, "dst mesh")
				reshardCase{
					dt:     rapid.SampledFrom(dtypes).Draw(t, "dtype"),
					src:    mustSharding(t, shape, sm, drawSpec(t, sm, ndim, "src")),
					dst:    mustSharding(t, shape, dm, drawSpec(t, dm, ndim, "dst")),
					seed:   rapid.Uint64().Draw(t, "seed"),
					random: rapid.Bool().Draw(t, "random layouts"),
				}.run(t)
			})
		})
	}
}

// stagesOf builds rank 0's reshard from src to dst (float32, dense local
// parts) on a host group and returns its number of stages, checking that
// each side's chunks cover every segment once.
func stagesOf(t *testing.T, src, dst Sharding) int {
	t.Helper()
	ts, err := NewHostGroup(src.mesh.Size())
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	views := make([]*DistView, 2)
	for i, sh := range []Sharding{src, dst} {
		b, _ := sh.BlockOf(0)
		loc, err := newLocal(rng, b.Shape(), layout.Float32, false)
		if err != nil {
			t.Fatal(err)
		}
		if views[i], err = NewDistView(sh, layout.Float32, 0, loc.view); err != nil {
			t.Fatal(err)
		}
	}
	r, err := NewReshard(ts[0], views[1], views[0])
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, side := range []struct {
		ts   []Transfer
		segs func(*stage) []Segment
	}{{r.plan.Sends, func(s *stage) []Segment { return s.sendSeg }}, {r.plan.Recvs, func(s *stage) []Segment { return s.recvSeg }}} {
		for _, tr := range side.ts {
			var got int64
			var offs []int64
			for c := range r.stages {
				if sg := side.segs(&r.stages[c])[tr.Peer]; sg.Len > 0 {
					got += sg.Len
					offs = append(offs, sg.Off)
				}
			}
			if got != tr.Bytes || !slices.IsSorted(offs) {
				t.Errorf("transfer %v: chunks of %d bytes at %v, want %d in order", tr, got, offs, tr.Bytes)
			}
		}
	}
	return len(r.stages)
}
