package memview

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stridekit/stridekit/internal/pairgen"
	"github.com/stridekit/stridekit/kernels"
	"github.com/stridekit/stridekit/layout"
	"github.com/stridekit/stridekit/runtime/cuda"
	"github.com/stridekit/stridekit/runtime/hostcopy"
)

// TestPipeGeometry runs the staged peer pipeline's geometry on the host:
// for random pairs, cut in chunks of random sizes or graded (half each),
// each chunk packed from the source into
// C, moved as bytes and unpacked into the destination with
// runtime/hostcopy must give what a plain copy gives, margins untouched;
// the chunks must tile C exactly, and every chunk's offsets keep the
// alignments the kernels are bound for.
func TestPipeGeometry(t *testing.T) {
	defer cutSmall()()
	r := rand.New(rand.NewPCG(7, 21))
	graded := 0
	for i := range 600 {
		c := pairgen.Random(r, 64<<10)
		target := int64(1) << r.IntN(14)
		var rate rateFunc
		if i%2 == 1 { // graded chunks, with the costs per copy of a small copy
			target, rate = 0, constRate(float64(1+r.IntN(6))*pipeBase.link)
		}
		dbuf, sbuf := make([]byte, c.DstBuf), make([]byte, c.SrcBuf)
		pairgen.Poison(dbuf)
		pairgen.Fill(r, sbuf)
		want := bytes.Clone(dbuf)
		naiveCopy(want[c.DstBase:], c.Dst, sbuf[c.SrcBase:], c.Src)
		g, err := pipeGeometry(c.Dst, c.Src, 16, 16, target, rate)
		if err != nil {
			t.Fatalf("pair %d %v: %v", i, c, err)
		}
		if rate != nil && len(g.chunks) >= 3 {
			graded++
		}
		got := bytes.Clone(dbuf)
		runGeometry(t, g, got[c.DstBase:], sbuf[c.SrcBase:])
		if !bytes.Equal(got, want) {
			t.Fatalf("pair %d %v, chunks of %d bytes (%d chunks): wrong result", i, c, target, len(g.chunks))
		}
	}
	if graded < 40 {
		t.Errorf("%d of 300 graded geometries cut in 3 chunks or more; want 40 or more", graded)
	}
}

// cutSmall makes the graded geometry cut small copies as it cuts large
// ones (a cost per copy of a nanosecond, no least run) until the function
// it returns restores the model.
func cutSmall() func() {
	m, run := pipeBase, pipeMinRun
	pipeBase.perCopy, pipeMinRun = 1e-9, 1
	return func() { pipeBase, pipeMinRun = m, run }
}

// runGeometry moves src (from its lowest byte) into dst (from its lowest
// byte) chunk by chunk through two images, as the pipeline does, and checks
// that the chunks tile C and keep their alignments.
func runGeometry(t *testing.T, g *pipeGeom, dst, src []byte) {
	simg, dimg := make([]byte, g.span), make([]byte, g.span)
	covered := int64(0)
	for _, ch := range g.chunks {
		subs := g.first[ch.shape]
		covered += ch.bytes
		if err := hostcopy.Copy(simg[ch.img:ch.img+ch.bytes], subs[1], src[ch.src:], subs[0]); err != nil {
			t.Fatal(err)
		}
		copy(dimg[ch.img:ch.img+ch.bytes], simg[ch.img:ch.img+ch.bytes])
		if err := hostcopy.Copy(dst[ch.dst:], subs[2], dimg[ch.img:ch.img+ch.bytes], subs[3]); err != nil {
			t.Fatal(err)
		}
		for i, off := range [3]int64{ch.src, ch.dst, ch.img} {
			if off%int64(g.aligns[i]) != 0 {
				t.Fatalf("chunk %+v: offset %d not aligned to %d", ch, off, g.aligns[i])
			}
		}
	}
	if covered != g.span {
		t.Fatalf("chunks cover %d bytes of C's %d", covered, g.span)
	}
}

// TestPipeCuts: a 64 MiB transpose is cut into about pipeChunks chunks of
// two shapes at most, and a copy below the target into one.
func TestPipeCuts(t *testing.T) {
	d, _ := layout.Dense([]int64{4096, 4096}, 4, layout.C)
	s, _ := d.Permute(1, 0)
	g, err := pipeGeometry(d, s, 16, 16, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(g.chunks); n < pipeChunks || n > 2*pipeChunks {
		t.Errorf("%d chunks, want %d to %d", n, pipeChunks, 2*pipeChunks)
	}
	if !g.packDirect || g.unpackDirect {
		t.Errorf("packDirect %v unpackDirect %v, want true false", g.packDirect, g.unpackDirect)
	}
	small, _ := layout.Dense([]int64{64, 64}, 4, layout.C)
	if g, _ := pipeGeometry(small, small, 16, 16, 0, nil); len(g.chunks) != 1 {
		t.Errorf("a 16 KiB copy in %d chunks, want 1", len(g.chunks))
	}
}

// TestPeerKeyDirection: two copies between the same two devices, one each
// way, with views laid out alike and run on the same device (one pulled,
// one pushed), have different binding keys: their kernels run on
// different devices.
func TestPeerKeyDirection(t *testing.T) {
	d0, d1 := new(cuda.Device), new(cuda.Device)
	l, _ := layout.Dense([]int64{8, 8}, 4, layout.C)
	a := fakeView(t, cuda.MemoryDevice, d0, 0x10000, l, layout.Float32)
	b := fakeView(t, cuda.MemoryDevice, d1, 0x10000, l, layout.Float32)
	pull := keyOf(b, a, PathPeer, 16, 16, d1) // a → b on b's device
	push := keyOf(a, b, PathPeer, 16, 16, d1) // b → a on b's device
	if pull == push || pull.sum() == push.sum() {
		t.Errorf("pull and push share a key: %+v", pull)
	}
	if pull.peer != d0 || push.peer != d0 || pull.push || !push.push {
		t.Errorf("keys %+v and %+v", pull, push)
	}
}

// TestPeerSide: a peer copy of 1 MiB or more runs on the destination's
// device when the source fills its span and on the source's when it has
// gaps or broadcasts, whatever the stream; a smaller one on the stream's
// device (the source's without a stream).
func TestPeerSide(t *testing.T) {
	d0, d1 := new(cuda.Device), new(cuda.Device)
	big, _ := layout.Dense([]int64{1024, 1024}, 4, layout.C)
	small, _ := layout.Dense([]int64{16, 16}, 4, layout.C)
	view := func(d *cuda.Device, l layout.Layout) *StridedMemoryView {
		return fakeView(t, cuda.MemoryDevice, d, 0x100000, l, layout.Float32)
	}
	gapped := fakeView(t, cuda.MemoryDevice, d0, 0x100000, mustNew(t, []int64{1024, 1024}, []int64{2048, 2}, 4), layout.Float32)
	bcast := fakeView(t, cuda.MemoryDevice, d0, 0x100000, mustNew(t, []int64{1024, 1024}, []int64{0, 1}, 4), layout.Float32)
	transposed, _ := big.Permute(1, 0)
	for _, c := range []struct {
		name     string
		dst, src *StridedMemoryView
		s        *cuda.Stream
		want     *cuda.Device
	}{
		{"dense source, stream of the source: pulled", view(d1, big), view(d0, transposed), d0.LegacyStream(), d1},
		{"dense source, no stream: pulled", view(d1, big), view(d0, big), nil, d1},
		{"strided source, stream of the destination: pushed", view(d1, big), gapped, d1.LegacyStream(), d0},
		{"broadcast source: pushed", view(d1, big), bcast, d1.LegacyStream(), d0},
		{"small, stream of the destination", view(d1, small), view(d0, small), d1.LegacyStream(), d1},
		{"small, stream of the source", view(d1, small), view(d0, small), d0.LegacyStream(), d0},
		{"small, no stream", view(d1, small), view(d0, small), nil, d0},
	} {
		if got := execDevice(c.dst, c.src, PathPeer, c.s); got != c.want {
			t.Errorf("%s: runs on %p, want %p", c.name, got, c.want)
		}
	}
}

// TestOverlaps: views overlap when their byte spans share a byte.
func TestOverlaps(t *testing.T) {
	d := new(cuda.Device)
	l, _ := layout.Dense([]int64{4, 4}, 4, layout.C) // 64 bytes
	a := fakeView(t, cuda.MemoryDevice, d, 0x1000, l, layout.Float32)
	for _, c := range []struct {
		at   uintptr
		want bool
	}{{0x1000, true}, {0x103f, true}, {0x1040, false}, {0x0fc1, true}, {0x0fc0, false}} {
		b := fakeView(t, cuda.MemoryDevice, d, c.at, l, layout.Float32)
		if a.Overlaps(b) != c.want || b.Overlaps(a) != c.want {
			t.Errorf("views at 0x1000 and %#x: Overlaps %v, want %v", c.at, a.Overlaps(b), c.want)
		}
	}
	if a.Overlaps(nil) {
		t.Error("Overlaps(nil) is true")
	}
}

// TestPipeOuter: chunks of a staged copy keep both views' runs long. A
// full reversal's source-outermost dim is the destination's innermost;
// cutting it into eight chunks would leave the unpack 32-byte runs.
func TestPipeOuter(t *testing.T) {
	for _, c := range []struct {
		shape []int64
		perm  []int
	}{
		{[]int64{64, 64, 256, 256}, []int{3, 2, 1, 0}},
		{[]int64{64, 256, 128, 128}, []int{0, 2, 3, 1}},
		{[]int64{16384, 16384}, []int{1, 0}},
		{[]int64{300000, 30, 30}, []int{0, 2, 1}},
		{[]int64{8192, 16384, 3}, []int{1, 0, 2}},
	} {
		sd, _ := layout.Dense(c.shape, 4, layout.C)
		s, _ := sd.Permute(c.perm...)
		d, _ := layout.Dense(s.Shape(), 4, layout.C)
		g, err := pipeGeometry(d, s, 16, 16, 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(g.chunks) < pipeChunks {
			t.Errorf("%v perm %v: %d chunks, want %d or more", c.shape, c.perm, len(g.chunks), pipeChunks)
		}
		for k, subs := range g.first {
			for i, l := range subs {
				if run := runBytes(l, -1, 0); run < min(pipeRunBytes, runBytes([4]layout.Layout{s, d, d, s}[i], -1, 0)) {
					t.Errorf("%v perm %v: chunk shape %d, sub-layout %d %v has runs of %d bytes", c.shape, c.perm, k, i, l, run)
				}
			}
		}
	}
}

// TestChunkBytes: $STRIDEKIT_PEER_CHUNK is empty (the default) or a
// positive number of bytes; anything else is an error naming it.
func TestChunkBytes(t *testing.T) {
	if n, err := chunkBytes(""); n != 0 || err != nil {
		t.Errorf(`chunkBytes("") = %d, %v; want 0, nil`, n, err)
	}
	if n, err := chunkBytes("8388608"); n != 8<<20 || err != nil {
		t.Errorf(`chunkBytes("8388608") = %d, %v`, n, err)
	}
	for _, v := range []string{"0", "-4", "8M", "x"} {
		if _, err := chunkBytes(v); !errors.Is(err, cuda.ErrInvalidValue) || !strings.Contains(err.Error(), "STRIDEKIT_PEER_CHUNK") {
			t.Errorf("chunkBytes(%q) = %v, want ErrInvalidValue naming the variable", v, err)
		}
	}
}

// TestStagePays: with peer access, large box tiles of sub-word items and
// pushed elementwise copies whose destination rows are not whole 128-byte
// lines are staged; other plans, and copies under pipeMin, run one kernel.
func TestStagePays(t *testing.T) {
	plan := func(shape, dstStrides, srcStrides []int64, item int) *layout.Plan {
		return planOf(t, shape, dstStrides, srcStrides, item)
	}
	const n = 4096
	for _, c := range []struct {
		name string
		p    *layout.Plan
		push bool
		want bool
	}{
		{"f16 NCHW→NHWC box tile", plan([]int64{64, 64, 64, 64}, nil, []int64{262144, 1, 4096, 64}, 2), false, true},
		{"f32 4-d reversal box tile", plan([]int64{45, 45, 182, 182}, nil, []int64{1, 45, 2025, 368550}, 4), false, false},
		{"f32 2-d transpose tile", plan([]int64{n, n}, nil, []int64{1, n}, 4), false, false},
		{"::3 rows of 4095 f32, pushed", plan([]int64{n, n - 1}, nil, []int64{3 * n, 3}, 4), true, true},
		{"::3 rows of 4095 f32, pulled", plan([]int64{n, n - 1}, nil, []int64{3 * n, 3}, 4), false, false},
		{"::3 rows of 4096 f32, pushed", plan([]int64{n, n}, nil, []int64{3 * n, 3}, 4), true, false},
		{"small f16 box tile", plan([]int64{64, 64, 8, 8}, nil, []int64{4096, 1, 512, 64}, 2), false, false},
		{"contiguous", plan([]int64{n, n}, nil, nil, 4), false, false},
	} {
		if got := stagePays(c.p, c.push); got != c.want {
			t.Errorf("%s (%v, %d bytes): stagePays = %v, want %v", c.name, c.p.Sig, c.p.Bytes, got, c.want)
		}
	}
}

// TestPushPays: tile transposes and elementwise copies of 16-byte
// accesses are pushed; box tiles and narrower elementwise copies are not.
func TestPushPays(t *testing.T) {
	checkRule(t, "pushPays", pushPays, []ruleCase{
		{"f32 transpose (tile)", []int64{1024, 1024}, []int64{1, 1024}, 4, true},
		{"16-byte items, permuted outer dims (elementwise)", []int64{64, 64, 8}, []int64{8, 512, 1}, 16, true},
		{"rows of 72 bytes, permuted outer dims (elementwise, 8-byte accesses)", []int64{64, 64, 18}, []int64{18, 1152, 1}, 4, false},
		{"f32 4-d reversal (box tile)", []int64{45, 45, 182, 182}, []int64{1, 45, 2025, 368550}, 4, false},
	}, peerElemRuns)
}

// TestGatherPays: the named peer cases whose gather was faster on two
// NVLinked H100s are gathered, those whose gather was slower are not
// (for a device of compute capability 9.0 with an H100's memory bandwidth
// and the tuning table's word gathers).
func TestGatherPays(t *testing.T) {
	checkRule(t, "gatherPays", func(p *layout.Plan) bool { return gatherPays(p, 90, h100Bandwidth) }, []ruleCase{
		{"f32 transpose", []int64{8192, 8192}, []int64{1, 8192}, 4, true},
		{"batched 19×19 f32 transposes", []int64{185897, 19, 19}, []int64{361, 1, 19}, 4, true},
		{"(0,2,1,3) f32", []int64{45, 182, 45, 182}, []int64{1490580, 182, 33124, 1}, 4, true},
		{"::3 f32 slice", []int64{10032, 6689}, []int64{60195, 3}, 4, true},
		{"f32 4-d reversal", []int64{182, 182, 45, 45}, []int64{1, 182, 33124, 1490580}, 4, false},
		{"u8 transpose", []int64{16384, 16384}, []int64{1, 16384}, 1, false},
		{"f16 NHWC→NCHW", []int64{54, 215, 107, 107}, []int64{2461535, 1, 23005, 215}, 2, false},
		{"f16 transpose", []int64{16384, 16384}, []int64{1, 16384}, 2, false},
		{"RGB u8 transpose", []int64{13377, 6688, 3}, []int64{3, 40131, 1}, 1, false},
		// 2-byte items gathered in words (gen.GatherWords): neighbours in
		// the source at most 2 KiB apart in the destination.
		{"f16 NCHW→NHWC", []int64{54, 107, 107, 215}, []int64{2461535, 107, 1, 11449}, 2, true},
		{"12-byte items", []int64{152, 227, 163}, []int64{1, 163, 37001}, 12, false},
		{"contiguous", []int64{4096, 4096}, nil, 4, false},
		// Short runs: faster gathered on two NVLinked H100s (seeds 911,
		// 913, 917 and 919 of stridebench peer) where the neighbours in
		// the source are near enough in the destination.
		{"f16 7-d permutation of 12- and 16-byte runs", []int64{23, 17, 8, 11, 7, 23, 6}, []int64{62832, 336, 1, 5712, 8, 1445136, 56}, 2, true},
		{"f32 8-d permutation of 36- and 56-byte runs", []int64{11, 9, 6, 12, 8, 7, 3, 14}, []int64{84672, 1, 931392, 9, 108, 864, 5588352, 6048}, 4, true},
		{"u8 8-d permutation of 5- and 7-byte runs", []int64{13, 26, 6, 7, 7, 5, 19, 7}, []int64{5460, 35, 910, 496860, 70980, 1, 3478020, 5}, 1, true},
		{"u8 6-d permutation, neighbours 294576 apart", []int64{23, 10, 19, 19, 24, 34}, []int64{2945760, 1, 10, 155040, 190, 4560}, 1, false},
		{"u8 5-d permutation, neighbours 62624 apart", []int64{28, 38, 32, 19, 103}, []int64{722, 1, 2082248, 38, 20216}, 1, false},
		{"f16 6-d permutation of 28-byte runs, neighbours 181350 apart", []int64{13, 14, 13, 50, 9, 31}, []int64{700, 1, 282100, 14, 3667300, 9100}, 2, true},
	}, peerElemRuns)
}

// h100Bandwidth and h200Bandwidth are the memory bandwidths of the two
// GPUs gatherPays was measured on, in bytes a second.
const h100Bandwidth, h200Bandwidth = 3.35e12, 4.8e12

// TestGatherPaysBeyondL2: gathers whose source sectors L2 does not keep
// until their reuse (d·32 bytes over 4 MiB), from stridebench peer on two
// NVLinked H200s (the 4-d reversal, seeds 1201, 1203 and 1207), each a box
// tile otherwise. On a compute capability 9.x device with an H200's memory
// the 4- and 8-byte ones gather and the 2- and 12-byte ones, whose gathers
// lost, do not; anywhere else none gathers (an H100's lost on the
// reversal, 77 → 60% of cuMemcpyPeer; 8-byte items were not timed there).
func TestGatherPaysBeyondL2(t *testing.T) {
	h200 := []ruleCase{
		{"f32 4-d reversal", []int64{182, 182, 45, 45}, []int64{1, 182, 33124, 1490580}, 4, true},
		{"f32 8-d permutation, neighbours 3448500 apart (seed 1201)", []int64{5, 10, 6, 19, 11, 5, 11, 5}, []int64{1, 30, 5, 300, 28500, 5700, 1567500, 313500}, 4, true},
		{"f64 7-d permutation, neighbours 489216 apart (seed 1203)", []int64{17, 8, 4, 13, 12, 14, 7}, []int64{1, 148512, 37128, 2856, 238, 17, 1188096}, 8, true},
		{"f64 6-d permutation, neighbours 374220 apart (seed 1203)", []int64{23, 10, 11, 27, 14, 9}, []int64{1, 23, 782460, 2070, 55890, 230}, 8, true},
		{"f16 6-d permutation, neighbours 1274130 apart (seed 1207)", []int64{26, 13, 27, 22, 15, 11}, []int64{1, 26, 338, 1505790, 100386, 9126}, 2, false},
		{"12-byte 3-d permutation (seed 1207)", []int64{300, 95, 197}, []int64{1, 300, 28500}, 12, false},
	}
	checkRule(t, "gatherPays on an H200", func(p *layout.Plan) bool { return gatherPays(p, 90, h200Bandwidth) }, h200, peerElemRuns)
	none := slices.Clone(h200)
	for i := range none {
		none[i].want = false
	}
	for _, g := range []struct {
		name string
		arch int
		dram int64
	}{{"an H100", 90, h100Bandwidth}, {"compute capability 10.0 with an H200's memory", 100, h200Bandwidth}, {"a device of unknown bandwidth", 90, 0}} {
		checkRule(t, "gatherPays on "+g.name, func(p *layout.Plan) bool { return gatherPays(p, g.arch, g.dram) }, none, peerElemRuns)
	}
}

// ruleCase is a copy into a dense C-order dst of shape from a src with
// strides src, and what a rule of the peer path must say of its plan.
type ruleCase struct {
	name       string
	shape, src []int64
	item       int
	want       bool
}

// checkRule checks rule, named name, on every case, planned with opts.
func checkRule(t *testing.T, name string, rule func(*layout.Plan) bool, cases []ruleCase, opts ...kernels.PlanOption) {
	t.Helper()
	for _, c := range cases {
		p := planOf(t, c.shape, nil, c.src, c.item, opts...)
		if got := rule(p); got != c.want {
			t.Errorf("%s (%v): %s = %v, want %v", c.name, p.Sig, name, got, c.want)
		}
	}
}

// planOf returns the plan of a copy between layouts of shape with strides
// dstStrides and srcStrides (nil: dense C order), 16-byte aligned, with
// opts applied.
func planOf(t *testing.T, shape, dstStrides, srcStrides []int64, item int, opts ...kernels.PlanOption) *layout.Plan {
	t.Helper()
	opt := layout.PlanOptions{DstAlign: 16, SrcAlign: 16}
	for _, o := range opts {
		o(&opt)
	}
	p, err := layout.PlanCopy(mustNew(t, shape, dstStrides, item), mustNew(t, shape, srcStrides, item), opt)
	if err != nil {
		t.Fatal(err)
	}
	return &p
}
