package dist

import (
	"fmt"
	"math"
	"math/bits"
	"strings"
)

// Transfer is one box a rank sends to, or receives from, one other rank.
type Transfer struct {
	// Peer is the other rank.
	Peer int
	// Box is the box of global indices moved.
	Box Block
	// Bytes is the box's size in bytes.
	Bytes int64
}

// Plan is what a Reshard does on its rank: the box it keeps (copied from
// its local source view straight into its local destination view), the
// boxes it sends and receives, one per peer at most, and the totals. It is
// the same for every Run; benchmarks read the bytes moved from it.
type Plan struct {
	// Rank is the rank the plan is for.
	Rank int
	// Keep is the box copied locally (empty when none), KeepBytes its size.
	Keep      Block
	KeepBytes int64
	// Sends and Recvs are the boxes exchanged with other ranks, by peer.
	Sends, Recvs []Transfer
	// SendBytes and RecvBytes are the totals over Sends and Recvs: what
	// this rank puts on, and takes off, the transport.
	SendBytes, RecvBytes int64
}

// String describes the plan: one line of totals, then one line per box.
func (p Plan) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "rank %d: keep %d B, send %d B to %d ranks, receive %d B from %d ranks",
		p.Rank, p.KeepBytes, p.SendBytes, len(p.Sends), p.RecvBytes, len(p.Recvs))
	if p.KeepBytes > 0 {
		fmt.Fprintf(&b, "\n  keep %v %d B", p.Keep, p.KeepBytes)
	}
	for _, t := range p.Sends {
		fmt.Fprintf(&b, "\n  to %d: %v %d B", t.Peer, t.Box, t.Bytes)
	}
	for _, t := range p.Recvs {
		fmt.Fprintf(&b, "\n  from %d: %v %d B", t.Peer, t.Box, t.Bytes)
	}
	return b.String()
}

// clone returns a deep copy of p.
func (p Plan) clone() Plan {
	q := p
	q.Keep = append(Block(nil), p.Keep...)
	q.Sends = cloneTransfers(p.Sends)
	q.Recvs = cloneTransfers(p.Recvs)
	return q
}

func cloneTransfers(ts []Transfer) []Transfer {
	out := make([]Transfer, len(ts))
	for i, t := range ts {
		out[i] = Transfer{t.Peer, append(Block(nil), t.Box...), t.Bytes}
	}
	return out
}

// source picks, for destination rank q, which replica of source rank p's
// block sends q what q needs of that block; it returns p itself when p is
// the one. The choice depends on p's block, q and the source sharding
// alone, so every rank computes the same one: the sender and the receiver
// of each box agree without talking.
//
// The rule: q itself when q holds a replica of the block (no transfer);
// else the replica whose index along the replicated mesh axes (its
// coordinates on them, a mixed-radix number) is
//
//	(q's index along the replicated axes + q's index along the split axes) mod R
//
// where R is the number of replicas. Destinations that differ on a mesh
// axis thus tend to read from different replicas, in turn, spreading the
// load.
func (s Sharding) source(p, q int, cp, cq []int) int {
	m := s.mesh
	m.coords(p, cp)
	m.coords(q, cq)
	if len(s.repl) == 0 {
		return p
	}
	same := true
	for _, a := range s.split {
		same = same && cp[a] == cq[a]
	}
	if same {
		return q
	}
	r, n := m.radix(cq, s.repl)
	g, _ := m.radix(cq, s.split)
	j := int((int64(r) + int64(g%n)) % int64(n)) // no overflow of a 32-bit int
	for k := len(s.repl) - 1; k >= 0; k-- {
		a := s.repl[k]
		cp[a] = j % m.sizes[a]
		j /= m.sizes[a]
	}
	return m.rank(cp)
}

// plan computes rank me's plan for moving a tensor of itemsize bytes per
// element from sharding src to sharding dst (of one shape, and meshes of
// one size): for every peer the intersection of the two blocks, kept when
// the source replica rule picks the sender. Sizes that overflow int64 (a
// broadcast local view may stand for more bytes than exist) are ErrShape
// errors.
func plan(me int, dst, src Sharding, itemsize int64) (Plan, error) {
	p := Plan{Rank: me}
	cp, cq := make([]int, src.mesh.NDim()), make([]int, src.mesh.NDim())
	// What me sends: its source block ∩ each destination block, where the
	// rule picks me as the sender.
	err := pairs(me, src, dst, itemsize, func(q int) bool { return src.source(me, q, cp, cq) == me },
		func(t Transfer) error {
			if t.Peer == me {
				p.Keep, p.KeepBytes = t.Box, t.Bytes
				return nil
			}
			p.Sends = append(p.Sends, t)
			return addBytes(&p.SendBytes, t.Bytes, me, "sends")
		})
	if err != nil {
		return Plan{}, err
	}
	// What me receives: each source block ∩ its destination block, from
	// the rank the rule picks (me itself being the kept box).
	err = pairs(me, dst, src, itemsize, func(q int) bool { return q != me && src.source(q, me, cp, cq) == q },
		func(t Transfer) error {
			p.Recvs = append(p.Recvs, t)
			return addBytes(&p.RecvBytes, t.Bytes, me, "receives")
		})
	if err != nil {
		return Plan{}, err
	}
	return p, nil
}

// pairs calls add with the transfer of the box mine ∩ other for every
// rank q that pick accepts and whose box is not empty: mine is me's block
// under sharding a, other q's under sharding b.
func pairs(me int, a, b Sharding, itemsize int64, pick func(q int) bool, add func(Transfer) error) error {
	mine, err := a.BlockOf(me)
	if err != nil {
		return err
	}
	for q := range a.mesh.Size() {
		if !pick(q) {
			continue
		}
		other, err := b.BlockOf(q)
		if err != nil {
			return err
		}
		box := mine.intersect(other)
		if box.Empty() {
			continue
		}
		bytes, ok := mul64(box.Volume(), itemsize)
		if !ok {
			return fmt.Errorf("%w: box %v of %d-byte items", ErrShape, box, itemsize)
		}
		if err := add(Transfer{q, box, bytes}); err != nil {
			return err
		}
	}
	return nil
}

// addBytes adds n to the total *sum of rank me's transfers in one
// direction, refusing one past int64.
func addBytes(sum *int64, n int64, me int, what string) error {
	s, ok := add64(*sum, n)
	if !ok {
		return fmt.Errorf("%w: rank %d %s more than 2⁶³ bytes", ErrShape, me, what)
	}
	*sum = s
	return nil
}

// mul64 returns a·b for a, b ≥ 0 (a = -1: an overflowed volume), and
// whether it fits in int64.
func mul64(a, b int64) (int64, bool) {
	if a < 0 || b < 0 {
		return 0, false
	}
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	return int64(lo), hi == 0 && lo <= math.MaxInt64
}

// add64 returns a+b for a, b ≥ 0, and whether it fits in int64.
func add64(a, b int64) (int64, bool) {
	return a + b, a <= math.MaxInt64-b
}
