package kernels

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/stridekit/stridekit/gen"
	"github.com/stridekit/stridekit/internal/layouttest"
	"github.com/stridekit/stridekit/internal/testenv"
	"github.com/stridekit/stridekit/layout"
	"github.com/stridekit/stridekit/runtime/cuda"
	"github.com/stridekit/stridekit/runtime/hostcopy"
)

// TestGPUSpecialised copies random pairs of every class and item size
// through kernels specialised to their plans (Bound.Specialise) and checks
// each against runtime/hostcopy, with poisoned destinations and margins.
func TestGPUSpecialised(t *testing.T) {
	dev := testenv.NeedGPU(t)
	testenv.NeedNVRTC(t)
	st := testenv.NewStream(t, dev)
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 12))
	n := 6
	if testing.Short() {
		n = 2
	}
	counts, pass, fail := randomCopies(t, dev, st, r, n, true)
	// Fixed box tiles of 3-byte items whose dst runs are long enough for
	// the specialised kernel's word store (the tuning table's wordstore),
	// at two alignments: the random pairs may draw none.
	for _, c := range []struct{ shape, ds, ss []int64 }{
		{[]int64{4, 3, 9, 250}, []int64{6750, 2250, 250, 1}, []int64{6750, 9, 1, 27}},
		{[]int64{4, 3, 9, 250}, []int64{6750, 2250, 250, 1}, []int64{9, 1, 108, 1080}},
	} {
		dl, sl := layouttest.MustNew(t, c.shape, c.ds, 3), layouttest.MustNew(t, c.shape, c.ss, 3)
		for _, pad := range []int{0, 5} {
			sig, err := runCase(t, dev, st, r, gpuCase{name: "wordstore", dl: dl, sl: sl, padD: pad, padS: 2 * pad, spec: true})
			if err == nil && sig.Class != layout.ClassBoxTile {
				err = fmt.Errorf("%v ← %v: plan %v, want a box tile", dl, sl, sig)
			}
			tally(t, counts, &pass, &fail, sig, err)
		}
	}
	t.Logf("specialised copies: %d passed, %d failed; by class: %v", pass, fail, counts)
	if counts[layout.ClassBoxTile.String()] == 0 {
		t.Error("no box-tile plan among the pairs")
	}
}

// TestGPUSpecialiseLimit: past the process's limit Specialise fails with
// ErrSpecialiseLimit, SpecialiseLater queues nothing, and the copy runs on
// its generic kernel.
func TestGPUSpecialiseLimit(t *testing.T) {
	dev := testenv.NeedGPU(t)
	testenv.NeedNVRTC(t)
	SetMaxSpecialised(0)
	defer SetMaxSpecialised(DefaultMaxSpecialised)
	dl, _ := layout.New([]int64{40, 24}, nil, 4)
	sl, _ := layout.New([]int64{40, 24}, []int64{1, 40}, 4)
	b, err := Bind(dev, dl, sl, 16, 16)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Specialise(); !errors.Is(err, ErrSpecialiseLimit) {
		t.Fatalf("Specialise past the limit: %v, want ErrSpecialiseLimit", err)
	}
	if b.SpecialiseLater() {
		t.Error("SpecialiseLater queued a request past the limit")
	}
	if b.Tier() != TierGeneric || b.Running() != b.Kernel {
		t.Errorf("tier %v running %s, want generic %s", b.Tier(), b.Running(), b.Kernel)
	}
}

// tierCase is a benchmark case in stridebench's syntax: a dense C array of
// shape, the source a view of it through perm, the destination dense.
type tierCase struct {
	name  string
	item  int
	shape []int64
	perm  []int
}

// tierCases are random permutations of the kinds the generic box tile is
// slowest on, and one case of the vector tile, about 64 MiB each.
var tierCases = []tierCase{
	{"u8-7d", 1, []int64{37, 13, 11, 17, 7, 7, 16}, []int{2, 1, 3, 6, 5, 0, 4}},
	{"u8-5d", 1, []int64{33, 56, 49, 39, 19}, []int{0, 3, 4, 1, 2}},
	{"x3-7d", 3, []int64{20, 5, 12, 8, 19, 11, 11}, []int{2, 5, 0, 6, 3, 1, 4}},
	{"x3-3d", 3, []int64{293, 300, 223}, []int{2, 0, 1}},
	{"f16-5d", 2, []int64{29, 68, 49, 15, 23}, []int{4, 2, 0, 3, 1}},
	{"f32-3d", 4, []int64{293, 300, 167}, []int{2, 1, 0}},
	{"f32-6d", 4, []int64{10, 29, 11, 22, 14, 17}, []int{5, 4, 0, 2, 1, 3}},
	{"f64-4d", 8, []int64{61, 70, 83, 23}, []int{2, 3, 0, 1}},
	{"c128-5d", 16, []int64{13, 4, 7, 11, 16, 4}, []int{5, 1, 4, 2, 0, 3}},
	{"tile-f32", 4, []int64{4096, 4096}, []int{1, 0}},
}

// layouts returns the case's dst and src layouts.
func (c tierCase) layouts() (dl, sl layout.Layout, err error) {
	n := len(c.shape)
	cs := make([]int64, n)
	st := int64(1)
	for k := n - 1; k >= 0; k-- {
		cs[k] = st
		st *= c.shape[k]
	}
	vs, vst := make([]int64, n), make([]int64, n)
	for i, p := range c.perm {
		vs[i], vst[i] = c.shape[p], cs[p]
	}
	if dl, err = layout.New(vs, nil, c.item); err != nil {
		return
	}
	sl, err = layout.New(vs, vst, c.item)
	return
}

// BenchmarkTiers times each tierCase on the generic and on the
// specialised kernel, interleaved sample by sample (CUDA events, the
// median of 15 each), against cuMemcpyDtoD of the same bytes in the same
// run, and reports both as % of memcpy and the specialised kernel's
// compile time.
func BenchmarkTiers(b *testing.B) {
	dev := testenv.NeedGPU(b)
	testenv.NeedNVRTC(b)
	st := testenv.NewStream(b, dev)
	for _, c := range tierCases {
		b.Run(c.name, func(b *testing.B) {
			dl, sl, err := c.layouts()
			if err != nil {
				b.Fatal(err)
			}
			generic, spec, mem, compile, sig := tierTimes(b, dev, st, dl, sl)
			b.ReportMetric(100*mem/generic, "generic-%memcpy")
			b.ReportMetric(100*mem/spec, "specialised-%memcpy")
			b.ReportMetric(float64(compile.Milliseconds()), "compile-ms")
			b.Logf("%s %v: generic %.1f%%, specialised %.1f%% of memcpy (compile %v)", c.name, sig, 100*mem/generic, 100*mem/spec, compile)
		})
	}
}

// tierTimes returns the median times of the copy dl ← sl on the generic
// and the specialised kernel and of memcpy of the same bytes, the compile
// time, and the plan's signature.
func tierTimes(b *testing.B, dev *cuda.Device, st *cuda.Stream, dl, sl layout.Layout) (generic, spec, mem float64, compile time.Duration, sig layout.Signature) {
	db, sb := benchBuffers(b, dev, int(dl.RequiredSizeInBytes()), int(sl.RequiredSizeInBytes()))
	kg, err := Bind(dev, dl, sl, 256, 256)
	if err != nil {
		b.Fatal(err)
	}
	ks, _ := Bind(dev, dl, sl, 256, 256)
	t0 := time.Now()
	if err := ks.Specialise(); err != nil {
		b.Fatal(err)
	}
	compile = time.Since(t0)
	if kg.Tier() != TierGeneric || ks.Tier() != TierSpecialised {
		b.Fatalf("tiers %v and %v", kg.Tier(), ks.Tier())
	}
	dp, sp := db.Ptr(), sb.Ptr()
	runs := []func() error{
		func() error { return kg.Enqueue(st, dp, sp) },
		func() error { return ks.Enqueue(st, dp, sp) },
		func() error { return dev.MemcpyAsync(dp, sp, int(dl.RequiredSizeInBytes()), st) },
	}
	ts := make([][]float64, len(runs))
	e0, _ := dev.NewEvent(true)
	e1, _ := dev.NewEvent(true)
	defer e0.Close()
	defer e1.Close()
	for i := range 18 {
		for j, run := range runs {
			_ = e0.Record(st)
			if err := run(); err != nil {
				b.Fatal(err)
			}
			_ = e1.Record(st)
			if err := e1.Synchronize(); err != nil {
				b.Fatal(err)
			}
			d, _ := cuda.ElapsedTime(e0, e1)
			if i >= 3 {
				ts[j] = append(ts[j], d.Seconds())
			}
		}
	}
	med := func(x []float64) float64 { sort.Float64s(x); return x[len(x)/2] }
	return med(ts[0]), med(ts[1]), med(ts[2]), compile, kg.Plan.Sig
}

// TestGPUSpecialiseFailure: a specialised kernel that does not compile
// fails Specialise with the compiler's error and leaves the copy on its
// generic kernel; asked for in the background, the failure is recorded and
// the copy, never waiting, stays generic and correct.
func TestGPUSpecialiseFailure(t *testing.T) {
	dev := testenv.NeedGPU(t)
	testenv.NeedNVRTC(t)
	st := testenv.NewStream(t, dev)
	good := specialisedSource
	specialisedSource = func(sig layout.Signature, k gen.Knobs, args []byte) (string, string, error) {
		name, src, err := good(sig, k, args)
		return name, src + "\n#error injected by TestGPUSpecialiseFailure\n", err
	}
	defer func() { specialisedSource = good }()
	pair := func(n int64) (dl, sl layout.Layout) {
		dl, _ = layout.New([]int64{n, 29}, nil, 4)
		sl, _ = layout.New([]int64{n, 29}, []int64{1, n}, 4)
		return dl, sl
	}
	dl, sl := pair(37)
	b, err := Bind(dev, dl, sl, 16, 16)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Specialise(); err == nil || b.Tier() != TierGeneric {
		t.Fatalf("Specialise of a source that does not compile: %v, tier %v", err, b.Tier())
	}
	dl, sl = pair(41)
	b, err = Bind(dev, dl, sl, 16, 16)
	if err != nil {
		t.Fatal(err)
	}
	if !b.SpecialiseLater() {
		t.Fatal("SpecialiseLater queued nothing")
	}
	name := gen.SpecialisedName(b.Plan.Sig, b.Args)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		if rec, ok := specRecord(name); ok && rec.Err != nil {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("no failed compile recorded for %s: %+v", name, rec)
		}
	}
	if b.Tier() != TierGeneric {
		t.Fatalf("tier %v after a failed compile", b.Tier())
	}
	if err := checkBound(dev, st, b, dl, sl); err != nil {
		t.Fatal(err)
	}
}

// specRecord returns the record of specialised kernel name.
func specRecord(name string) (SpecialisedKernel, bool) {
	ks, _ := Specialisations()
	for _, k := range ks {
		if k.Name == name {
			return k, true
		}
	}
	return SpecialisedKernel{}, false
}

// checkBound copies random bytes through b between fresh device buffers of
// layouts dl and sl and compares the result with runtime/hostcopy's.
func checkBound(dev *cuda.Device, st *cuda.Stream, b *Bound, dl, sl layout.Layout) error {
	src := make([]byte, sl.RequiredSizeInBytes())
	for i := range src {
		src[i] = byte(i*131 + 7)
	}
	want := make([]byte, dl.RequiredSizeInBytes())
	if err := hostcopy.Copy(want, dl, src, sl); err != nil {
		return err
	}
	sb, err := dev.Alloc(len(src), nil)
	if err != nil {
		return err
	}
	defer sb.Close()
	db, err := dev.Alloc(len(want), nil)
	if err != nil {
		return err
	}
	defer db.Close()
	if err := sb.CopyFromHost(src); err != nil {
		return err
	}
	if err := dev.Synchronize(); err != nil {
		return err
	}
	if err := b.Enqueue(st, db.Ptr(), sb.Ptr()); err != nil {
		return err
	}
	if err := st.Synchronize(); err != nil {
		return err
	}
	got := make([]byte, len(want))
	if err := db.CopyToHost(got); err != nil {
		return err
	}
	if !bytes.Equal(got, want) {
		return fmt.Errorf("%v: the copy differs from hostcopy's", b.Plan.Sig)
	}
	return nil
}
