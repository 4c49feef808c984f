package gen

import "github.com/stridekit/stridekit/layout"

// DefaultItemsizes are the element sizes of the default kernel set: the
// planner widens elements to these where alignment allows, so odd sizes
// (3, 6, 12 bytes) are rarer and are generated at run time.
var DefaultItemsizes = []uint8{1, 2, 4, 8, 16}

// DefaultMaxNDim is the largest canonical rank of the default set.
const DefaultMaxNDim = 6

// DefaultSet returns the signatures package kernels commits, in a fixed
// order: every class that has a kernel, the itemsizes of DefaultItemsizes,
// canonical ranks 1–DefaultMaxNDim, both index widths. It is pruned to what
// the planner (layout.PlanCopy) can emit and to the vector widths that pay:
//
//   - Vec is 1 or the widest (16/itemsize): the planner picks the widest
//     vector that extents, strides and alignment allow; the widths in between
//     (a 4-byte item with only 8-byte alignment, say) are rare and compile at
//     run time. This halves the set.
//   - elem: Vec 1 only (the planner widens the element instead of vectorising
//     an elementwise copy).
//   - bcast: rank ≥ 2 (a rank-1 broadcast of a stride-0 src is a fill).
//   - contig: rank 1 (canonical dense copies merge to one dim).
//   - tile: every src-fastest position 0..nd-2.
//
// That is 546 kernels; ranks over 6, odd itemsizes and in-between vector
// widths are generated and compiled on first use.
func DefaultSet() []layout.Signature {
	var out []layout.Signature
	vecs := func(item uint8) []uint8 {
		if item >= 16 {
			return []uint8{1}
		}
		return []uint8{1, 16 / item}
	}
	for _, idx := range []bool{false, true} {
		for _, item := range DefaultItemsizes {
			for _, v := range vecs(item) {
				out = append(out, layout.Signature{Class: layout.ClassContiguous, NDim: 1, Itemsize: item, Vec: v, Index64: idx})
			}
		}
	}
	for _, cls := range []layout.Class{layout.ClassElementwise, layout.ClassTile, layout.ClassBroadcast, layout.ClassFill} {
		for nd := uint8(1); nd <= DefaultMaxNDim; nd++ {
			if (cls == layout.ClassTile || cls == layout.ClassBroadcast) && nd < 2 {
				continue
			}
			for _, idx := range []bool{false, true} {
				for _, item := range DefaultItemsizes {
					vs := vecs(item)
					if cls == layout.ClassElementwise {
						vs = vs[:1]
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
