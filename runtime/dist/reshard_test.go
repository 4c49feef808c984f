package dist

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stridekit/stridekit/layout"
	"github.com/stridekit/stridekit/runtime/cuda"
	"github.com/stridekit/stridekit/runtime/memview"
	"pgregory.net/rapid"
)

// dtypes are the dtypes the property test draws: item sizes 1, 2, 3, 4,
// 8 and 16 bytes.
var dtypes = func() []layout.DType {
	x3, err := layout.Opaque(3)
	if err != nil {
		panic(err)
	}
	return []layout.DType{layout.Uint8, layout.Bool, layout.Float16, layout.BFloat16, x3,
		layout.Float32, layout.Int32, layout.Float64, layout.Complex64, layout.Complex128}
}()

// drawMesh draws a mesh of n ranks with 1 to 3 axes (of size 1 too).
func drawMesh(t *rapid.T, n int, label string) Mesh {
	axes := rapid.IntRange(1, 3).Draw(t, label+" axes")
	sizes := make([]int, axes)
	rest := n
	for a := range axes - 1 {
		var divs []int
		for d := 1; d <= rest; d++ {
			if rest%d == 0 {
				divs = append(divs, d)
			}
		}
		sizes[a] = rapid.SampledFrom(divs).Draw(t, label+" size")
		rest /= sizes[a]
	}
	sizes[axes-1] = rest
	return mustMesh(t, sizes...)
}

// drawSpec draws a spec of a tensor of ndim dims over m: each mesh axis,
// in a random order, splits a random dim or none (replicated).
func drawSpec(t *rapid.T, m Mesh, ndim int, label string) Spec {
	spec := make(Spec, ndim)
	order := rapid.Permutation(seq(m.NDim())).Draw(t, label+" axis order")
	for _, a := range order {
		if d := rapid.IntRange(-1, ndim-1).Draw(t, label+" dim of axis"); d >= 0 {
			spec[d] = append(spec[d], a)
		}
	}
	return spec
}

func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// TestReshardProperty reshards random tensors (1 to 4 dims of extents 1
// to 9, item sizes 1 to 16 bytes) between random shardings over random
// meshes (1 to 8 ranks, 1 to 3 axes; replication, uneven and empty parts)
// with random local layouts, and checks every rank's destination element
// by element against the pattern.
func TestReshardProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ndim := rapid.IntRange(1, 4).Draw(t, "ndim")
		shape := make([]int64, ndim)
		for d := range shape {
			shape[d] = rapid.Int64Range(1, 9).Draw(t, "extent")
		}
		n := rapid.IntRange(1, 8).Draw(t, "ranks")
		sm, dm := drawMesh(t, n, "src mesh"), drawMesh(t, n, "dst mesh")
		c := reshardCase{
			dt:     rapid.SampledFrom(dtypes).Draw(t, "dtype"),
			src:    mustSharding(t, shape, sm, drawSpec(t, sm, ndim, "src")),
			dst:    mustSharding(t, shape, dm, drawSpec(t, dm, ndim, "dst")),
			seed:   rapid.Uint64().Draw(t, "seed"),
			random: rapid.Bool().Draw(t, "random layouts"),
		}
		c.run(t)
	})
}

func TestReshardRowsToColumns(t *testing.T) {
	for _, n := range []int{1, 2, 3, 4} {
		m := mustMesh(t, n)
		rows := mustSharding(t, []int64{6, 5}, m, Spec{{0}})
		cols := mustSharding(t, []int64{6, 5}, m, Spec{nil, {0}})
		for _, random := range []bool{false, true} {
			reshardCase{dt: layout.Float32, src: rows, dst: cols, seed: uint64(n), random: random}.run(t)
			reshardCase{dt: layout.Float64, src: cols, dst: rows, seed: uint64(n), random: random}.run(t)
		}
	}
	// The bytes of 2 ranks: each keeps a quarter and swaps a quarter.
	m := mustMesh(t, 2)
	plans := reshardCase{
		dt:  layout.Float32,
		src: mustSharding(t, []int64{4, 4}, m, Spec{{0}}),
		dst: mustSharding(t, []int64{4, 4}, m, Spec{nil, {0}}),
	}.run(t)
	for r, p := range plans {
		if p.KeepBytes != 16 || p.SendBytes != 16 || p.RecvBytes != 16 || len(p.Sends) != 1 || p.Sends[0].Peer != 1-r {
			t.Errorf("rank %d: %v", r, p)
		}
	}
	if p := plans[0]; p.Keep.String() != "[0:2, 0:2]" {
		t.Errorf("keep %v", p.Keep)
	}
	want := "rank 0: keep 16 B, send 16 B to 1 ranks, receive 16 B from 1 ranks\n" +
		"  keep [0:2, 0:2] 16 B\n  to 1: [0:2, 2:4] 16 B\n  from 1: [2:4, 0:2] 16 B"
	if got := plans[0].String(); got != want {
		t.Errorf("plan:\n%s\nwant:\n%s", got, want)
	}
}

func TestReshard4D(t *testing.T) {
	shape := []int64{4, 3, 5, 6}
	m := mustMesh(t, 2, 2, 2)
	flat := mustMesh(t, 8)
	cases := []struct{ src, dst Sharding }{
		{mustSharding(t, shape, m, Spec{{0}, {1}, nil, {2}}), mustSharding(t, shape, m, Spec{{2, 1}, nil, {0}})},
		{mustSharding(t, shape, m, Spec{nil, nil, nil, {0, 1, 2}}), mustSharding(t, shape, flat, Spec{{0}})},
		{mustSharding(t, shape, m, Spec{{1}}), mustSharding(t, shape, m, Spec{nil, {0}, {2}, {1}})},
	}
	for i, c := range cases {
		for _, dt := range []layout.DType{layout.Int16, layout.Complex128} {
			reshardCase{dt: dt, src: c.src, dst: c.dst, seed: uint64(i), random: true}.run(t)
			reshardCase{dt: dt, src: c.dst, dst: c.src, seed: uint64(i), random: true}.run(t)
		}
	}
}

// TestReshardEdgeShapes covers a 0-dim tensor, an empty tensor and more
// ranks than rows (empty blocks).
func TestReshardEdgeShapes(t *testing.T) {
	m := mustMesh(t, 2, 2)
	for _, c := range []reshardCase{
		{src: mustSharding(t, nil, m, nil), dst: mustSharding(t, nil, m, nil)},
		{src: mustSharding(t, []int64{0, 3}, m, Spec{{0}}), dst: mustSharding(t, []int64{0, 3}, m, Spec{nil, {1, 0}})},
		{src: mustSharding(t, []int64{2, 3}, m, Spec{{0, 1}}), dst: mustSharding(t, []int64{2, 3}, m, Spec{{1}, {0}})},
		{src: mustSharding(t, []int64{3}, mustMesh(t, 7), Spec{{0}}), dst: mustSharding(t, []int64{3}, mustMesh(t, 7), nil)},
	} {
		c.dt = layout.Int32
		c.random = true
		c.run(t)
	}
}

// TestReplicatedSource checks the replica rule: a rank that holds a
// replica of what it needs copies it locally, and the senders of a
// replicated block take turns.
func TestReplicatedSource(t *testing.T) {
	m := mustMesh(t, 4, 2)
	shape := []int64{8, 8}
	// Replicated everywhere → split: nothing moves between ranks.
	for _, p := range (reshardCase{dt: layout.Uint8, src: mustSharding(t, shape, m, nil), dst: mustSharding(t, shape, m, Spec{{0}, {1}})}).run(t) {
		if p.SendBytes != 0 || p.RecvBytes != 0 || p.KeepBytes != 8 {
			t.Errorf("replicated → split: %v", p)
		}
	}
	// Rows split over axis 0 (replicated over axis 1) → rows split over
	// axis 1: both replicas of each block send.
	plans := reshardCase{dt: layout.Uint8, src: mustSharding(t, shape, m, Spec{{0}}), dst: mustSharding(t, shape, m, Spec{{1}})}.run(t)
	var sent [8]int64
	for _, p := range plans {
		sent[p.Rank] = p.SendBytes
	}
	for r := 0; r < 8; r += 2 { // ranks 2a and 2a+1 hold rows 2a:2a+2
		if sent[r] == 0 || sent[r+1] == 0 {
			t.Errorf("replicas %d and %d of one block send %d and %d bytes: want both to send", r, r+1, sent[r], sent[r+1])
		}
	}
	// A reshard onto the same replicated sharding moves nothing.
	same := mustSharding(t, shape, m, Spec{nil, {0}})
	for _, p := range (reshardCase{dt: layout.Uint8, src: same, dst: same}).run(t) {
		if p.SendBytes != 0 || p.RecvBytes != 0 || p.KeepBytes != 16 {
			t.Errorf("identity: %v", p)
		}
	}
	// Rows over axis 0 of a 2×2 mesh (replicated over axis 1) → columns
	// over axis 1 (replicated over axis 0): the two ranks that need a
	// block neither holds read it from its two replicas, one each, so
	// every rank sends one box.
	m = mustMesh(t, 2, 2)
	shape = []int64{4, 4}
	for _, p := range (reshardCase{dt: layout.Uint8, src: mustSharding(t, shape, m, Spec{{0}}), dst: mustSharding(t, shape, m, Spec{nil, {1}})}).run(t) {
		if len(p.Sends) != 1 || p.SendBytes != 4 {
			t.Errorf("spread: %v", p)
		}
	}
}

// TestReshardInPlace reshards with the source and destination local views
// on the same memory.
func TestReshardInPlace(t *testing.T) {
	m := mustMesh(t, 2)
	shape := []int64{4, 6}
	rows := mustSharding(t, shape, m, Spec{{0}})
	cols := mustSharding(t, shape, m, Spec{nil, {0}})
	src, dst := make([]*DistView, 2), make([]*DistView, 2)
	bufs := make([][]float32, 2)
	for r := range 2 {
		bufs[r] = make([]float32, 12)
		for k := range 12 {
			bufs[r][k] = float32(r*12 + k) // rows 2r, 2r+1 of the 4×6 matrix 0..23
		}
		rl, _ := rows.LocalLayout(r, layout.Float32, layout.C)
		cl, _ := cols.LocalLayout(r, layout.Float32, layout.F)
		sv, err := memview.FromHost(bufs[r], rl)
		if err != nil {
			t.Fatal(err)
		}
		dv, err := memview.FromHost(bufs[r], cl)
		if err != nil {
			t.Fatal(err)
		}
		src[r], _ = NewDistView(rows, layout.Float32, r, sv)
		dst[r], _ = NewDistView(cols, layout.Float32, r, dv)
	}
	if _, err := runGroup(2, dst, src); err != nil {
		t.Fatal(err)
	}
	// Rank r holds columns 3r..3r+2, column-major: element (i, j) at
	// j·4 + i, whose value is i·6 + 3r + j.
	for r := range 2 {
		for j := range 3 {
			for i := range 4 {
				if got, want := bufs[r][j*4+i], float32(i*6+3*r+j); got != want {
					t.Errorf("rank %d (%d, %d): %v, want %v", r, i, j, got, want)
				}
			}
		}
	}
}

// TestReshardRunAgain runs one Reshard twice, on new data, then closed.
func TestReshardRunAgain(t *testing.T) {
	m := mustMesh(t, 3)
	a := mustSharding(t, []int64{5, 7}, m, Spec{{0}})
	b := mustSharding(t, []int64{5, 7}, m, Spec{nil, {0}})
	ts, _ := NewHostGroup(3)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	errs := make(chan error, 3)
	for r := range 3 {
		go func() { errs <- runAgain(ctx, ts[r], a, b) }()
	}
	for range 3 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// runAgain is one rank of TestReshardRunAgain: it loads a 5×7 matrix of
// int64 k + 100·round from sharding a, reshards to b, stores it and checks
// the rank's block, twice; then checks that Run after Close fails.
func runAgain(ctx context.Context, t Transport, a, b Sharding) error {
	r := t.Rank()
	src, _ := NewHostDistView(a, layout.Int64, r)
	dst, _ := NewHostDistView(b, layout.Int64, r)
	rs, err := NewReshard(t, dst, src)
	if err != nil {
		return err
	}
	global := make([]int64, 35)
	gv, _ := memview.FromHost(global, mustLayout(layout.New([]int64{5, 7}, nil, 8)))
	for round := range int64(2) {
		for k := range global {
			global[k] = 100*round + int64(k)
		}
		if err := src.LoadFrom(gv, nil); err != nil {
			return err
		}
		if err := rs.Run(ctx, nil); err != nil {
			return err
		}
		clear(global)
		if err := dst.StoreTo(gv, nil); err != nil {
			return err
		}
		blk := dst.Block()
		for i := blk[0].Lo; i < blk[0].Hi; i++ {
			for j := blk[1].Lo; j < blk[1].Hi; j++ {
				if got, want := global[i*7+j], 100*round+i*7+j; got != want {
					return fmt.Errorf("rank %d round %d: (%d, %d) is %d, want %d", r, round, i, j, got, want)
				}
			}
		}
	}
	if err := rs.Settle(); err != nil { // host copies: nothing to compile
		return fmt.Errorf("rank %d: Settle: %v", r, err)
	}
	if err := rs.Close(); err != nil {
		return err
	}
	if err := rs.Run(ctx, nil); !errors.Is(err, ErrClosed) {
		return fmt.Errorf("rank %d: Run after Close: %v", r, err)
	}
	if err := rs.Settle(); !errors.Is(err, ErrClosed) {
		return fmt.Errorf("rank %d: Settle after Close: %v", r, err)
	}
	return nil
}

func TestNewReshardErrors(t *testing.T) {
	ts, _ := NewHostGroup(2)
	shape := []int64{4, 4}
	m2, m4 := mustMesh(t, 2), mustMesh(t, 4)
	rows := mustSharding(t, shape, m2, Spec{{0}})
	cols := mustSharding(t, shape, m2, Spec{nil, {0}})
	view := func(sh Sharding, dt layout.DType, r int) *DistView {
		d, err := NewHostDistView(sh, dt, r)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	src0, dst0 := view(rows, layout.Float32, 0), view(cols, layout.Float32, 0)
	ro, _ := NewDistView(cols, layout.Float32, 0, dst0.Local().AsReadOnly())
	for _, c := range []struct {
		name     string
		t        Transport
		dst, src *DistView
		want     error
	}{
		{"nil transport", nil, dst0, src0, ErrNil},
		{"nil dst", ts[0], nil, src0, ErrNil},
		{"zero DistView", ts[0], dst0, &DistView{}, ErrNil},
		{"other shape", ts[0], view(mustSharding(t, []int64{4, 5}, m2, nil), layout.Float32, 0), src0, ErrShape},
		{"other dtype", ts[0], view(cols, layout.Int32, 0), src0, ErrDType},
		{"mesh of 4 ranks", ts[0], view(mustSharding(t, shape, m4, nil), layout.Float32, 0), src0, ErrMesh},
		{"both meshes of 4 ranks", ts[0], view(mustSharding(t, shape, m4, nil), layout.Float32, 0), view(mustSharding(t, shape, m4, Spec{{0}}), layout.Float32, 0), ErrMesh},
		{"transport of rank 1", ts[1], dst0, src0, ErrRank},
		{"dst of rank 1", ts[0], view(cols, layout.Float32, 1), src0, ErrRank},
		{"read-only dst", ts[0], ro, src0, memview.ErrReadOnly},
	} {
		r, err := NewReshard(c.t, c.dst, c.src)
		if !errors.Is(err, c.want) || r != nil {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	r, err := NewReshard(ts[0], dst0, src0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	// Rows to columns of row-major parts: the received rows are dense in
	// the destination part, which takes them straight (no buffer).
	if s, rcv := r.Buffers(); s != 16 || rcv != 0 || !strings.HasPrefix(r.String(), "reshard float32 (4,4) over mesh(2) as (0, None) → (4,4) over mesh(2) as (None, 0)\nrank 0:") {
		t.Errorf("buffers %d %d, %s", s, rcv, r)
	}
}

// badAlloc is a transport whose Alloc returns a 2-D view.
type badAlloc struct{ Transport }

func (b badAlloc) Alloc(n int64, s *cuda.Stream) (*memview.StridedMemoryView, error) {
	return memview.FromHost(make([]byte, 2*n), mustLayout(layout.New([]int64{2, n}, nil, 1)))
}

func TestReshardBadTransport(t *testing.T) {
	ts, _ := NewHostGroup(1)
	s := mustSharding(t, []int64{3}, mustMesh(t, 1), nil)
	src, _ := NewHostDistView(s, layout.Int8, 0)
	dst, _ := NewHostDistView(s, layout.Int8, 0)
	if _, err := NewReshard(badAlloc{ts[0]}, dst, src); !errors.Is(err, ErrBuffer) {
		t.Errorf("2-D exchange buffer: %v", err)
	}
	huge := mustSharding(t, []int64{1 << 62}, mustMesh(t, 1), nil)
	if _, err := NewHostDistView(huge, layout.Int8, 0); !errors.Is(err, memview.ErrTooLarge) {
		t.Errorf("NewHostDistView of 2⁶² bytes: %v", err)
	}
}

// TestReshardDeadRank runs a reshard on 3 ranks of which one dies before
// the exchange: the others fail with ErrAborted, well within their
// deadline; with a rank that just never comes they fail with ErrTimeout
// at their deadline.
func TestReshardDeadRank(t *testing.T) {
	m := mustMesh(t, 3)
	a := mustSharding(t, []int64{6, 6}, m, Spec{{0}})
	b := mustSharding(t, []int64{6, 6}, m, Spec{nil, {0}})
	for _, abort := range []bool{true, false} {
		ts, _ := NewHostGroup(3)
		deadline := 200 * time.Millisecond
		if abort {
			deadline = 20 * time.Second
		}
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		errs := make(chan error, 2)
		start := time.Now()
		for r := range 3 {
			src, _ := NewHostDistView(a, layout.Float32, r)
			dst, _ := NewHostDistView(b, layout.Float32, r)
			rs, err := NewReshard(ts[r], dst, src)
			if err != nil {
				t.Fatal(err)
			}
			if r == 2 {
				if abort {
					ts[2].(*HostTransport).Abort(errors.New("out of memory"))
				}
				continue
			}
			go func() { errs <- rs.Run(ctx, nil) }()
		}
		for range 2 {
			err := <-errs
			if abort && (!errors.Is(err, ErrAborted) || !strings.Contains(err.Error(), "out of memory")) {
				t.Errorf("aborted rank: %v", err)
			}
			if !abort && (!errors.Is(err, ErrTimeout) || !errors.Is(err, context.DeadlineExceeded)) {
				t.Errorf("missing rank: %v", err)
			}
		}
		if el := time.Since(start); el > deadline+5*time.Second || abort && el > 5*time.Second {
			t.Errorf("abort %v: the ranks took %v to fail", abort, el)
		}
		cancel()
	}
}

// TestReshardDirect: between row-major local parts, rows → columns
// receives straight into each rank's destination (its rows of the
// columns are dense there) and columns → rows sends straight from each
// rank's source, so that side holds no buffer; the result is the
// reference's, and closing the reshard leaves the local parts open.
func TestReshardDirect(t *testing.T) {
	m := mustMesh(t, 2)
	shape := []int64{6, 8}
	rows := mustSharding(t, shape, m, Spec{{0}})
	cols := mustSharding(t, shape, m, Spec{nil, {0}})
	for _, c := range []struct {
		name             string
		from, to         Sharding
		sendBuf, recvBuf bool
	}{{"rows to columns", rows, cols, true, false}, {"columns to rows", cols, rows, false, true}} {
		t.Run(c.name, func(t *testing.T) {
			ts, err := NewHostGroup(2)
			if err != nil {
				t.Fatal(err)
			}
			global := make([]float32, 48)
			for i := range global {
				global[i] = float32(i + 1)
			}
			gl, _ := layout.Dense(shape, 4, layout.C)
			gv, _ := memview.FromHost(global, gl)
			var wg sync.WaitGroup
			errs := make([]error, 2)
			for r := range 2 {
				wg.Go(func() { errs[r] = directRank(ts[r], r, c.from, c.to, gv, c.sendBuf, c.recvBuf) })
			}
			wg.Wait()
			for r, err := range errs {
				if err != nil {
					t.Errorf("rank %d: %v", r, err)
				}
			}
		})
	}
}

// directRank is rank r of TestReshardDirect: load its source part from
// global, reshard, check which sides hold buffers and that its destination
// part is global's block, then that the parts stay open after Close.
func directRank(tr Transport, r int, from, to Sharding, global *memview.StridedMemoryView, sendBuf, recvBuf bool) error {
	src, err := NewHostDistView(from, layout.Float32, r)
	if err != nil {
		return err
	}
	dst, err := NewHostDistView(to, layout.Float32, r)
	if err != nil {
		return err
	}
	if err := src.LoadFrom(global, nil); err != nil {
		return err
	}
	rs, err := NewReshard(tr, dst, src)
	if err != nil {
		return err
	}
	if s, v := rs.Buffers(); (s > 0) != sendBuf || (v > 0) != recvBuf {
		return fmt.Errorf("buffers %d and %d bytes, want a send buffer %v and a receive buffer %v", s, v, sendBuf, recvBuf)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := rs.Run(ctx, nil); err != nil {
		return err
	}
	if err := rs.Close(); err != nil {
		return err
	}
	want, _ := NewHostDistView(to, layout.Float32, r)
	if err := want.LoadFrom(global, nil); err != nil {
		return err
	}
	got, wv := make([]float32, 24), make([]float32, 24)
	for i, v := range []*DistView{dst, want} {
		out := [][]float32{got, wv}[i]
		ov, _ := memview.FromHost(out, v.Local().Layout())
		if err := ov.CopyFrom(v.Local(), nil); err != nil {
			return fmt.Errorf("the local part after Close: %w", err)
		}
	}
	if !slices.Equal(got, wv) {
		return fmt.Errorf("destination part %v, want %v", got, wv)
	}
	return nil
}
