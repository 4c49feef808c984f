package memview

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"testing"
	"unsafe"

	"github.com/stridekit/stridekit/internal/pairgen"
	"github.com/stridekit/stridekit/internal/testenv"
	"github.com/stridekit/stridekit/kernels"
	"github.com/stridekit/stridekit/layout"
	"github.com/stridekit/stridekit/runtime/cuda"
)

// Peer copies (PathPeer): random pairs between two devices, pushed, pulled
// and staged, checked byte for byte against runtime/hostcopy on poisoned
// destinations, margins included. Only the copy's own stream is
// synchronized before the check, so a missing event between the two
// devices' streams shows as a wrong result. A third of the pairs run on
// the stream's device, a third where peerSide says, a third through the
// staged pipeline. STRIDEKIT_GPU_PEER_PAIRS sets the number of pairs
// (default 3,000; 300 with -short).

// peerPairs returns the number of pairs a peer test runs.
func peerPairs() int {
	n := 3000
	if testing.Short() {
		n = 300
	}
	if s := os.Getenv("STRIDEKIT_GPU_PEER_PAIRS"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	return n
}

// withStaged runs f with peer copies forced through the staged pipeline
// (as without peer access), the binding cache emptied before and after,
// cut so that small pairs are cut too: in chunks of 4 KiB, or graded with
// the costs of cutSmall.
func withStaged(graded bool, f func()) {
	forget()
	forceStaged, pipeTarget = true, 4<<10
	restore := func() {}
	if graded {
		pipeTarget, restore = 0, cutSmall()
	}
	defer func() { forceStaged, pipeTarget = false, 0; restore(); forget() }()
	f()
}

// withPolicy runs f with every peer copy, whatever its size, run on the
// device peerSide picks rather than the stream's, the binding cache
// emptied before and after.
func withPolicy(f func()) {
	forget()
	peerPolicyMin = 0
	defer func() { peerPolicyMin = 1 << 20; forget() }()
	f()
}

// wantSide is the device peerSide and pushPays picked for the last pair
// peerCheck copied (the policy mode's expectation).
var wantSide *cuda.Device

// peerCheck copies one random pair from device si's arena into device di's
// on a stream of device on, and checks every byte of the destination
// buffer. It returns the copy's plan.
func peerCheck(t *testing.T, r *rand.Rand, ar [2]*arena, ss [2]*cuda.Stream, di, si, on int, peer bool) (CopyPlan, error) {
	c := pairgen.Random(r, 1<<20)
	dbuf, sbuf := make([]byte, c.DstBuf), make([]byte, c.SrcBuf)
	pairgen.Poison(dbuf)
	pairgen.Fill(r, sbuf)
	ar[di].put(t, dbuf)
	ar[si].put(t, sbuf)
	dt, _ := layout.Opaque(c.Dst.Itemsize())
	dv, sv := ar[di].view(t, c.DstBase, c.Dst, dt), ar[si].view(t, c.SrcBase, c.Src, dt)
	wantSide = peerSide(dv, sv)
	var opts []CopyOption
	if peer {
		opts = append(opts, PeerStream(ss[1-on]))
	}
	if err := dv.CopyFrom(sv, ss[on], opts...); err != nil {
		return CopyPlan{}, fmt.Errorf("%v: %w", c, err)
	}
	if err := ss[on].Synchronize(); err != nil {
		t.Fatalf("%v: %v", c, err)
	}
	want := bytes.Clone(dbuf)
	naiveCopy(want[c.DstBase:], c.Dst, sbuf[c.SrcBase:], c.Src)
	if got := ar[di].get(t, int(c.DstBuf)); !bytes.Equal(got, want) {
		bad := 0
		for got[bad] == want[bad] {
			bad++
		}
		return CopyPlan{}, fmt.Errorf("%v: first bad byte %d of %d", c, bad, len(got))
	}
	cp, err := dv.Explain(sv)
	if err == nil && dv.span >= peerPolicyMin && (cp.Plan.Sig.Class == layout.ClassGather || pushPays(&cp.Plan)) {
		wantSide = sv.dev // a gather, or a plan that writes whole lines, is pushed
	}
	return cp, err
}

func TestGPUPeerPairs(t *testing.T) {
	devs := testenv.NeedGPUs(t, 2)
	testenv.NeedNVRTC(t)
	r := rand.New(rand.NewPCG(gpuSeed(t), 11))
	var ar [2]*arena
	var ss [2]*cuda.Stream
	for i, d := range devs[:2] {
		ar[i] = newArena(t, d, cuda.MemoryDevice, 2<<20+1024)
		ss[i] = testenv.NewStream(t, d)
	}
	n := peerPairs()
	served := map[string]int{}
	run := func(mode string, n int) {
		for i, failed := 0, 0; i < n && failed < 5; i++ {
			si := r.IntN(2)
			on := r.IntN(2) // the copy's stream: 0 the source's device, 1 the other
			if si == 1 {
				on = 1 - on
			}
			cp, err := peerCheck(t, r, ar, ss, 1-si, si, on, r.IntN(4) == 0)
			if err != nil {
				t.Errorf("%s pair %d (cuda:%d → cuda:%d on cuda:%d): %v", mode, i, si, 1-si, on, err)
				failed++
				continue
			}
			if cp.Path != PathPeer || cp.Staged != (mode == "staged") || mode == "policy" && cp.Device != wantSide {
				t.Fatalf("%s pair %d explained as %v on %v", mode, i, cp, cp.Device)
			}
			served[fmt.Sprintf("%s on %s", mode, map[bool]string{true: "src", false: "dst"}[on == si])]++
		}
	}
	run("direct", n/3)
	withPolicy(func() { run("policy", n/3) })
	withStaged(false, func() { run("staged", (n-2*(n/3))/2) })
	withStaged(true, func() { run("staged", n-2*(n/3)-(n-2*(n/3))/2) })
	t.Logf("peer pairs served: %v", served)
}

// TestGPUPeerStagedOneDevice runs the staged peer path (pack, peer memcpy,
// unpack) between two views of one device, so a one-GPU machine tests it
// too: the binding is made for PathPeer directly. Half the pairs are cut
// in chunks of 4 KiB, half graded (withStaged).
func TestGPUPeerStagedOneDevice(t *testing.T) {
	dev := testenv.NeedGPU(t)
	testenv.NeedNVRTC(t)
	r := rand.New(rand.NewPCG(gpuSeed(t), 13))
	s := testenv.NewStream(t, dev)
	ar := [2]*arena{newArena(t, dev, cuda.MemoryDevice, 2<<20+1024), newArena(t, dev, cuda.MemoryDevice, 2<<20+1024)}
	cut, n := 0, peerPairs()/3
	for i := range n {
		withStaged(i%2 == 1, func() {
			c := pairgen.Random(r, 1<<20)
			dbuf, sbuf := make([]byte, c.DstBuf), make([]byte, c.SrcBuf)
			pairgen.Poison(dbuf)
			pairgen.Fill(r, sbuf)
			ar[0].put(t, dbuf)
			ar[1].put(t, sbuf)
			dt, _ := layout.Opaque(c.Dst.Itemsize())
			dv, sv := ar[0].view(t, c.DstBase, c.Dst, dt), ar[1].view(t, c.SrcBase, c.Src, dt)
			da, sa := aligns(dv, sv, PathDevice)
			b, err := bindingFor(dv, sv, PathPeer, da, sa, dev)
			if err == nil && b.stg == nil {
				t.Fatalf("pair %d: not staged", i)
			}
			if err == nil {
				err = peerCopy(dv, sv, b, s, copyConfig{})
			}
			if err == nil {
				err = s.Synchronize()
			}
			if err != nil {
				t.Fatalf("pair %d %v: %v", i, c, err)
			}
			want := bytes.Clone(dbuf)
			naiveCopy(want[c.DstBase:], c.Dst, sbuf[c.SrcBase:], c.Src)
			if !bytes.Equal(ar[0].get(t, int(c.DstBuf)), want) {
				t.Fatalf("pair %d %v: wrong result", i, c)
			}
			if i%2 == 1 && len(b.stg.chunks) >= 3 {
				cut++
			}
		})
	}
	if cut < n/20 {
		t.Errorf("%d of %d graded pairs cut in 3 chunks or more; want %d or more", cut, n-n/2, n/20)
	}
}

// TestGPUPeerConcurrent: 32 goroutines copy transposes between two devices
// in both directions at once, half pushing and half pulling, on 8 streams
// of each device, and check their results; then a copy from a closed
// buffer fails with ErrClosed.
func TestGPUPeerConcurrent(t *testing.T) {
	devs := testenv.NeedGPUs(t, 2)
	testenv.NeedNVRTC(t)
	const workers, n = 32, 257
	var ss [2][8]*cuda.Stream
	for d := range 2 {
		for i := range ss[d] {
			ss[d][i] = testenv.NewStream(t, devs[d])
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() { errs <- peerWorker(devs, w, n, ss[w%2][w%8]) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	a, _ := devs[0].Alloc(n*n*4, nil)
	b, _ := devs[1].Alloc(n*n*4, nil)
	defer b.Close()
	l, _ := layout.Dense([]int64{n, n}, 4, layout.C)
	av, _ := FromBuffer(a, l, layout.Float32)
	bv, _ := FromBuffer(b, l, layout.Float32)
	a.Close()
	if err := bv.CopyFrom(av, ss[1][0]); !errors.Is(err, ErrClosed) {
		t.Errorf("copy from a closed buffer: %v, want ErrClosed", err)
	}
}

// peerWorker copies an n×n transpose from one device to the other (worker
// w: direction by w/2, pushed or pulled by w) five times on stream s and
// checks it.
func peerWorker(devs []*cuda.Device, w, n int, s *cuda.Stream) error {
	src, dst := devs[w/2%2], devs[1-w/2%2]
	host := make([]float32, n*n)
	for i := range host {
		host[i] = float32(w*1000000 + i)
	}
	l, _ := layout.Dense([]int64{int64(n), int64(n)}, 4, layout.C)
	a, err := src.Alloc(n*n*4, nil)
	if err != nil {
		return err
	}
	defer a.Close()
	b, err := dst.Alloc(n*n*4, nil)
	if err != nil {
		return err
	}
	defer b.Close()
	if err := a.CopyFromHost(asBytes(host)); err != nil {
		return err
	}
	av, _ := FromBuffer(a, l, layout.Float32)
	bv, _ := FromBuffer(b, l, layout.Float32)
	at, _ := av.Permute(1, 0)
	out := make([]float32, n*n)
	for range 5 {
		if err := bv.CopyFrom(at, s); err != nil {
			return fmt.Errorf("worker %d: %w", w, err)
		}
		if err := s.Synchronize(); err != nil {
			return err
		}
		if err := b.CopyToHost(asBytes(out)); err != nil {
			return err
		}
		for i := range n * n {
			if want := host[i%n*n+i/n]; out[i] != want {
				return fmt.Errorf("worker %d (%v → %v on %v): out[%d] = %v, want %v", w, src, dst, s.Device(), i, out[i], want)
			}
		}
	}
	return nil
}

// asBytes returns the bytes of f.
func asBytes(f []float32) []byte { return unsafe.Slice((*byte)(unsafe.Pointer(&f[0])), len(f)*4) }

// TestGPUPeerSettleStaged: Settle on a staged peer copy (two views of one
// device, graded chunks) specialises every pack and unpack kernel the
// tuning table specialises, not only the first chunk's, and the copy
// stays correct on them.
func TestGPUPeerSettleStaged(t *testing.T) {
	dev := testenv.NeedGPU(t)
	testenv.NeedNVRTC(t)
	s := testenv.NewStream(t, dev)
	r := rand.New(rand.NewPCG(gpuSeed(t), 17))
	ar := [2]*arena{newArena(t, dev, cuda.MemoryDevice, 4<<20), newArena(t, dev, cuda.MemoryDevice, 4<<20)}
	sd, _ := layout.Dense([]int64{48, 80, 100}, 4, layout.C)
	src, _ := sd.Permute(2, 0, 1) // a box tile of 4-byte items: specialise=1
	dst, _ := layout.Dense(src.Shape(), 4, layout.C)
	withStaged(true, func() {
		dbuf, sbuf := make([]byte, dst.RequiredSizeInBytes()), make([]byte, sd.RequiredSizeInBytes())
		pairgen.Poison(dbuf)
		pairgen.Fill(r, sbuf)
		ar[0].put(t, dbuf)
		ar[1].put(t, sbuf)
		dv, sv := ar[0].view(t, 0, dst, layout.Float32), ar[1].view(t, 0, src, layout.Float32)
		da, sa := aligns(dv, sv, PathDevice)
		b, err := bindingFor(dv, sv, PathPeer, da, sa, dev)
		if err != nil || b.stg == nil || len(b.stg.unpack) < 2 {
			t.Fatalf("binding %v, err %v: want a staged copy of two chunk shapes or more", b, err)
		}
		if err := (&BoundCopy{dst: dv, src: sv, path: PathPeer, b: b}).Settle(); err != nil {
			t.Fatal(err)
		}
		tuned := 0
		for i, k := range b.kernels() {
			if k.Knobs.SpecialisesPlan(&k.Plan) {
				tuned++
				if k.Tier() != kernels.TierSpecialised {
					t.Errorf("kernel %d (%s): %v after Settle", i, k.Kernel, k.Tier())
				}
			}
		}
		if tuned < 2 {
			t.Errorf("%d of %d kernels tuned to specialise; want 2 or more", tuned, len(b.kernels()))
		}
		if err := peerCopy(dv, sv, b, s, copyConfig{}); err != nil {
			t.Fatal(err)
		}
		if err := s.Synchronize(); err != nil {
			t.Fatal(err)
		}
		want := bytes.Clone(dbuf)
		naiveCopy(want, dst, sbuf, src)
		if !bytes.Equal(ar[0].get(t, len(dbuf)), want) {
			t.Fatal("wrong result on the specialised kernels")
		}
	})
}
