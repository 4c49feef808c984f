package gen

import "github.com/stridekit/stridekit/layout"

// DefaultItemsizes are the element sizes of the default kernel set: the
// planner widens elements to these where alignment allows.
var DefaultItemsizes = []uint8{1, 2, 4, 8, 16}

// BoxItemsizes are the element sizes of the default set's box-tile kernels:
// a box tile moves items of any size, odd ones included, without widening
// them.
var BoxItemsizes = []uint8{1, 2, 3, 4, 5, 6, 7, 8, 12, 16}

// DefaultMaxNDim is the largest canonical rank of the default set.
const DefaultMaxNDim = 6

// DefaultSet returns the default kernel set, in a fixed order: the
// signatures CI compiles with NVRTC for every architecture it checks
// (package kernels commits no source: any signature is rendered on first
// use). It holds every class that has a kernel, the itemsizes of
// DefaultItemsizes (BoxItemsizes for box tiles), canonical ranks
// 1–DefaultMaxNDim, both index widths, pruned to what the planner
// (layout.PlanCopy) can emit and to the vector widths that pay:
//
//   - Vec is 1 or the widest (16/itemsize): the planner picks the widest
//     vector that extents, strides and alignment allow; the widths in between
//     (a 4-byte item with only 8-byte alignment, say) are rare.
//   - elem, btile and gather: Vec 1 only (the planner widens the element
//     instead of vectorising an elementwise copy; a box tile moves runs in
//     16-byte pieces whatever the element).
//   - tile, bcast, btile: rank ≥ 2 (a rank-1 broadcast of a stride-0 src is
//     a fill; a rank-1 copy transposes nothing).
//   - tile: every src-fastest position 0..nd-2; 3-byte items too, in
//     vectors of four (layout's tileVector).
func DefaultSet() []layout.Signature {
	var out []layout.Signature
	vecs := func(item uint8) []uint8 {
		switch {
		case item >= 16:
			return []uint8{1}
		case item == 3:
			return []uint8{4} // the tile takes 3-byte items in vectors of 4 only
		}
		return []uint8{1, 16 / item}
	}
	for _, cls := range []layout.Class{layout.ClassElementwise, layout.ClassTile, layout.ClassBroadcast, layout.ClassFill, layout.ClassBoxTile, layout.ClassGather} {
		for nd := uint8(1); nd <= DefaultMaxNDim; nd++ {
			if (cls == layout.ClassTile || cls == layout.ClassBroadcast || cls == layout.ClassBoxTile) && nd < 2 {
				continue
			}
			items := DefaultItemsizes
			switch cls {
			case layout.ClassBoxTile:
				items = BoxItemsizes
			case layout.ClassTile:
				items = append(items[:len(items):len(items)], 3)
			}
			for _, idx := range []bool{false, true} {
				for _, item := range items {
					vs := vecs(item)
					if cls == layout.ClassElementwise || cls == layout.ClassBoxTile || cls == layout.ClassGather {
						vs = []uint8{1}
					}
					for _, v := range vs {
						fasts := []uint8{0}
						if cls == layout.ClassTile {
							fasts = fasts[:0]
							for f := uint8(0); f+1 < nd; f++ {
								fasts = append(fasts, f)
							}
						}
						for _, f := range fasts {
							out = append(out, layout.Signature{Class: cls, NDim: nd, Fast: f, Itemsize: item, Vec: v, Index64: idx})
						}
					}
				}
			}
		}
	}
	return out
}
