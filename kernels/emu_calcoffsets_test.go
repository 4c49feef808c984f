package kernels

import (
	"fmt"
	"testing"
)

// TestEmulatedCalcOffsets copies, on the CPU and in both tiers, box tiles
// (4 KiB) whose store phase computes each dst run element's shared-memory
// offset where the runs have one dim (Knobs.CalcOffsets) and reads it from
// the element table: dst runs of one dim and of several, the element-wise
// store of 1-, 2-, 3- and 4-byte items, the sibling store of bytes (dst
// rows of whole words) and the word store of 3-byte items, reversed src
// runs and ragged tiles. Both settings must copy every case; computing
// i·w0 one element off made it fail.
func TestEmulatedCalcOffsets(t *testing.T) {
	for _, co := range []int{1, 0} {
		t.Setenv("STRIDEKIT_KNOBS", fmt.Sprintf("btile calcoffsets=%d; btile/3 wordstore=64", co))
		r := emuRand(t, 14)
		for _, c := range []struct {
			shape []int64
			perm  []int
			item  int
			flip  bool // src's fastest dim reversed
		}{
			{[]int64{40, 163}, []int{1, 0}, 1, false},
			{[]int64{64, 36}, []int{1, 0}, 1, false},
			{[]int64{6, 5, 7, 11}, []int{2, 3, 0, 1}, 1, false},
			{[]int64{12, 8, 9, 20}, []int{1, 3, 0, 2}, 1, false},
			{[]int64{7, 9, 11, 13}, []int{3, 1, 0, 2}, 2, false},
			{[]int64{23, 45, 67}, []int{2, 1, 0}, 2, true},
			{[]int64{17, 23, 9}, []int{2, 0, 1}, 3, false},
			{[]int64{5, 6, 7, 8}, []int{3, 2, 0, 1}, 3, false},
			{[]int64{61, 19, 29}, []int{2, 0, 1}, 4, false},
			{[]int64{9, 4, 10, 6}, []int{1, 3, 2, 0}, 4, true},
		} {
			emuPermBoxTiles(t, r, fmt.Sprintf("calcoffsets=%d", co), c.shape, c.perm, c.item, c.flip)
		}
	}
}
