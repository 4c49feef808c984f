package gen

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stridekit/stridekit/internal/pairgen"
	"github.com/stridekit/stridekit/layout"
)

// TestPackGolden pins what the planner and the packer make of 10,000
// random copies (internal/pairgen's pairs of every kind, views of up to
// 256 MiB, pointers aligned to 1 to 256 bytes): the signature, the
// offsets, the launch (grid, block, shared memory) and every byte of the
// argument block, hashed. A change that only makes planning or packing
// cheaper must leave the hash as it is; a change meant to alter plans or
// launches (a new tile rule, a retuned table) updates it with
// go test ./gen -run PackGolden -update, and says so. The same copies
// planned with layout.PlanOptions.Gather have a hash of their own.
func TestPackGolden(t *testing.T) {
	golden(t, "pack10k.sha256", packHash(false, false))
}

// TestPackGoldenGather is TestPackGolden for the same copies planned as
// gathers (the peer path's plans).
func TestPackGoldenGather(t *testing.T) {
	golden(t, "gather10k.sha256", packHash(false, true))
}

// TestPackGoldenTable is TestPackGolden for the same copies planned with
// the box-tile options the tuning table gives the planner on a Hopper
// (BoxPlanOptions: tile size, load grain, triple stores, src-run cuts),
// as runtime/memview plans them: the plans that run, pinned.
func TestPackGoldenTable(t *testing.T) {
	golden(t, "table10k.sha256", packHash(true, false))
}

// packHash returns TestPackGolden's hash of the 10,000 copies, planned
// with the table's box options where table is set and PlanOptions.Gather
// set to gather.
func packHash(table, gather bool) []byte {
	r := rand.New(rand.NewPCG(15, 10000))
	aligns := []int{1, 2, 4, 8, 16, 256}
	h := sha256.New()
	buf := make([]byte, 1<<16)
	var p layout.Plan
	for range 10000 {
		c := pairgen.Random(r, 256<<20)
		var opt layout.PlanOptions
		if table {
			opt = BoxPlanOptions(c.Dst.Itemsize(), 90)
		}
		opt.DstAlign, opt.SrcAlign, opt.Gather = aligns[r.IntN(len(aligns))], aligns[r.IntN(len(aligns))], gather
		if err := layout.PlanCopyInto(&p, c.Dst, c.Src, opt); err != nil {
			fmt.Fprintf(h, "plan error %v\n", err)
			continue
		}
		fmt.Fprintf(h, "%v %d %d %d ", p.Sig, p.DstOffset, p.SrcOffset, p.Bytes)
		if p.Sig.Class == layout.ClassMemcpy || p.Sig.Class == layout.ClassNone {
			fmt.Fprintln(h)
			continue
		}
		n := ArgsSize(p.Sig)
		l, err := Pack(p.Sig, KnobsFor(p.Sig, 90), &p, 132, buf[:n])
		fmt.Fprintf(h, "%+v %v\n", l, err)
		h.Write(buf[:n])
	}
	return []byte(hex.EncodeToString(h.Sum(nil)) + "\n")
}
