package main

import (
	"testing"

	"github.com/stridekit/stridekit/runtime/dist"
)

// TestReshardCases: every named and random reshard case makes valid
// shardings on meshes of 2 and 4 ranks, and dense local layouts in its
// orders; the random ones are near their target size and split a
// different dim after than before (data crosses ranks).
func TestReshardCases(t *testing.T) {
	cases := append(namedReshards(), randomReshards(20, 3, 64<<20)...)
	for _, n := range []int{2, 4} {
		m, err := dist.NewMesh(n)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cases {
			for _, sp := range []struct {
				spec dist.Spec
				ord  any
			}{{c.From, c.SrcOrd}, {c.To, c.DstOr}} {
				sh, err := dist.NewSharding(c.Shape, m, sp.spec)
				if err != nil {
					t.Fatalf("%s on %d ranks: %v", c.Name, n, err)
				}
				if _, err := sh.LocalLayout(n-1, c.DType, c.SrcOrd); err != nil {
					t.Fatalf("%s on %d ranks: %v", c.Name, n, err)
				}
			}
		}
	}
	for _, c := range cases[len(namedReshards()):] {
		if a, b := splitDim(c.From), splitDim(c.To); a < 0 || a == b {
			t.Errorf("%s: split dims %d before and %d after, want two different dims", c.Name, a, b)
		}
		_, g, err := globalTensor(c)
		if err != nil {
			t.Fatal(err)
		}
		if b := g.Layout().RequiredSizeInBytes(); b < 16<<20 || b > 256<<20 {
			t.Errorf("%s: %d bytes, want about 64 MiB", c.Name, b)
		}
	}
}

// splitDim returns the dim sp splits over a mesh axis, or -1.
func splitDim(sp dist.Spec) int {
	for d, axes := range sp {
		if len(axes) > 0 {
			return d
		}
	}
	return -1
}
