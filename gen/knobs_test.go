package gen

import (
	"strings"
	"testing"

	"github.com/stridekit/stridekit/layout"
)

// TestSpecialiseDims checks the table's specialisation of box tiles: every
// item size but 12 bytes, 3-byte items only from 3 canonical dims, on the
// H100/H200 entries and the portable heuristic alike, and that
// specialisedims clears Specialise below its count whatever sets it.
func TestSpecialiseDims(t *testing.T) {
	for _, arch := range []int{0, 90} {
		for _, c := range []struct {
			item, nd int
			want     bool
		}{
			{3, 2, false}, {3, 3, true}, {3, 8, true},
			{1, 2, true}, {4, 2, true}, {12, 5, false},
		} {
			sig := layout.Signature{Class: layout.ClassBoxTile, NDim: uint8(c.nd), Itemsize: uint8(c.item), Vec: 1}
			if got := KnobsFor(sig, arch).Specialise; got != c.want {
				t.Errorf("sm_%d: %v: Specialise %v, want %v", arch, sig, got, c.want)
			}
		}
	}
	entries := []TuningEntry{{Class: layout.ClassElementwise, Set: map[string]int{"specialise": 1, "specialisedims": 4}}}
	for nd, want := range map[int]bool{1: false, 3: false, 4: true, 6: true} {
		sig := layout.Signature{Class: layout.ClassElementwise, NDim: uint8(nd), Itemsize: 4, Vec: 1}
		if got := LookupKnobs(entries, sig, 90).Specialise; got != want {
			t.Errorf("specialisedims=4, %d dims: Specialise %v, want %v", nd, got, want)
		}
	}
}

// TestWordStoreRendered checks that the word store is compiled into the
// kernels specialised to a plan of 3-byte items (from dst runs of 512
// bytes, the table's entry) and into no generic kernel, whose launch the
// specialised one shares.
func TestWordStoreRendered(t *testing.T) {
	// Under 1 MiB, so that the planner keeps the 3-byte items (larger box
	// tiles of short dst runs are planned in bytes).
	shape := []int64{2, 2, 28, 15, 15, 12}
	dst, err := layout.New(shape, []int64{151200, 75600, 2700, 180, 12, 1}, 3)
	if err != nil {
		t.Fatal(err)
	}
	src, err := layout.New(shape, []int64{1, 151200, 2, 840, 56, 12600}, 3)
	if err != nil {
		t.Fatal(err)
	}
	p, err := layout.PlanCopy(dst, src, layout.PlanOptions{DstAlign: 16, SrcAlign: 16})
	if err != nil || p.Sig.Class != layout.ClassBoxTile {
		t.Fatalf("plan %v (%v), want a box tile", p.Sig, err)
	}
	k := KnobsFor(p.Sig, 90)
	if k.WordStore != 512 {
		t.Fatalf("%v: wordstore=%d, want 512", p.Sig, k.WordStore)
	}
	buf := make([]byte, ArgsSize(p.Sig))
	if _, err := Pack(p.Sig, k, &p, 132, buf); err != nil {
		t.Fatal(err)
	}
	generic, err := Source(p.Sig, k)
	if err != nil {
		t.Fatal(err)
	}
	_, spec, err := SpecialisedSource(p.Sig, k, buf)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, src, want string
	}{{"generic", generic, "enum { WS = 0 };"}, {"specialised", spec, "enum { WS = 512 };"}} {
		if !strings.Contains(c.src, c.want) {
			t.Errorf("%s kernel of %v lacks %q", c.name, p.Sig, c.want)
		}
	}
}

// TestBoxGrid checks the box tile's grid: a block for every
// ⌈blockBytes/tileBytes⌉ tiles, never so many tiles a block that a
// multiprocessor gets none, and at most MaxGridX blocks.
func TestBoxGrid(t *testing.T) {
	for _, c := range []struct {
		ntiles, tileBytes, blockBytes, sm, want int64
		why                                     string
	}{
		{2655, 28000, 16384, 132, 2655, "tiles over blockbytes: one a block"},
		{6160, 9360, 16384, 132, 3080, "9 KiB tiles: two a block"},
		{6160, 1024, 16384, 132, 385, "1 KiB tiles: sixteen a block"},
		{128, 8192, 16384, 132, 128, "two a block would leave multiprocessors idle"},
		{300, 4096, 16384, 132, 150, "as many a block as leave one a multiprocessor"},
		{300, 4096, 16384, 0, 75, "multiprocessors unknown"},
		{1, 64, 16384, 132, 1, "one tile"},
		{5 << 30, 32768, 1, 132, MaxGridX, "more tiles than a grid has blocks"},
		{100, 0, 16384, 132, 100, "empty tiles count as one byte"},
	} {
		if got := boxGrid(c.ntiles, c.tileBytes, c.blockBytes, c.sm); got != c.want {
			t.Errorf("boxGrid(%d, %d, %d, %d) = %d, want %d (%s)", c.ntiles, c.tileBytes, c.blockBytes, c.sm, got, c.want, c.why)
		}
	}
}
