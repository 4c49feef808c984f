package kernels

import (
	"fmt"
	"testing"

	"github.com/stridekit/stridekit/layout"
)

// TestEmulatedOverlapTables copies, on the CPU and in both tiers, box tiles
// of 1-, 2-, 4- and 12-byte items with the dst runs' tables built while
// the block's first tile's words are in flight (Knobs.OverlapTables) and
// before its loads: tiles of 4 KiB, so that a block of the grid takes
// several and its later tiles reuse the tables; ragged tiles; contiguous,
// strided and reversed src runs (loadWords, loadStridedWords,
// loadStridedItems). The table sets the knob per item size; both settings
// must copy every case.
func TestEmulatedOverlapTables(t *testing.T) {
	for _, ot := range []int{1, 0} {
		t.Setenv("STRIDEKIT_KNOBS", fmt.Sprintf("btile overlaptables=%d", ot))
		r := emuRand(t, 12)
		for _, c := range []struct {
			shape []int64
			perm  []int
			item  int
			step  int64 // src's fastest dim steps this many items (-1: one, reversed)
		}{
			{[]int64{40, 163}, []int{1, 0}, 1, 1},
			{[]int64{7, 9, 11, 13}, []int{3, 1, 0, 2}, 2, 1},
			{[]int64{61, 19, 29}, []int{2, 0, 1}, 4, 1},
			{[]int64{23, 45, 67}, []int{2, 1, 0}, 4, -1},
			{[]int64{33, 70, 29}, []int{2, 0, 1}, 4, 2},
			{[]int64{45, 71, 13}, []int{1, 2, 0}, 1, 3},
			{[]int64{17, 23, 9}, []int{2, 0, 1}, 12, 1},
		} {
			perm, err := layout.Dense(c.shape, c.item, layout.Perm(c.perm...))
			if err != nil {
				t.Fatal(err)
			}
			ss, fast := perm.Strides(), 0
			for k := range ss {
				ss[k] *= max(c.step, 1) // src's fastest dim steps c.step items
				if ss[k] < ss[fast] {
					fast = k
				}
			}
			if c.step < 0 {
				ss[fast] = -ss[fast]
			}
			emuBoxTiles(t, r, fmt.Sprintf("overlaptables=%d", ot), c.shape, ss, c.item)
		}
	}
}
