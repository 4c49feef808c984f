package gen

import (
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
