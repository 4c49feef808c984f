package nccl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stridekit/stridekit/internal/testenv"
	"github.com/stridekit/stridekit/layout"
	"github.com/stridekit/stridekit/runtime/cuda"
	"github.com/stridekit/stridekit/runtime/dist"
	"github.com/stridekit/stridekit/runtime/memview"
)

// TestGPUReshardRandom reshards random tensors between random splits of
// a two-rank mesh (1-D, or 2×1 and 1×2, so that some specs replicate)
// over NCCL, one goroutine and GPU per rank, with local views in random
// dim orders: each case scattered from a host tensor, resharded, gathered
// and compared byte for byte.
func TestGPUReshardRandom(t *testing.T) {
	devs := testenv.NeedGPUs(t, 2)
	testenv.NeedNVRTC(t)
	needNCCL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Second)
	defer cancel()
	comms, streams := twoComms(t, ctx, devs)
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 3))
	meshes := [][]int{{2}, {2, 1}, {1, 2}}
	dts := []layout.DType{layout.Uint8, layout.Float16, layout.Float32, layout.Float64, layout.Complex128}
	n := 60
	if testing.Short() {
		n = 15
	}
	for i := range n {
		m, _ := dist.NewMesh(meshes[r.IntN(len(meshes))]...)
		rank := 1 + r.IntN(4)
		shape := make([]int64, rank)
		for k := range shape {
			shape[k] = 1 + r.Int64N(24)
		}
		c := reshardCase{shape, dts[r.IntN(len(dts))], randomSpec(r, rank, m.NDim()), randomSpec(r, rank, m.NDim()), i%4 == 3}
		if err := c.run(ctx, comms, streams, m, r); err != nil {
			t.Fatalf("case %d %+v on mesh %v: %v", i, c, m, err)
		}
	}
}

// reshardCase is a global shape, a dtype and two specs, and whether the
// reshard settles its kernels (Reshard.Settle) before it runs.
type reshardCase struct {
	shape    []int64
	dt       layout.DType
	from, to dist.Spec
	settle   bool
}

// randomSpec splits at most one dim over each of the mesh's nd axes (or
// leaves the axis out: replication).
func randomSpec(r *rand.Rand, rank, nd int) dist.Spec {
	s := make(dist.Spec, rank)
	for a := range nd {
		if d := r.IntN(rank + 1); d < rank {
			s[d] = append(s[d], a)
		}
	}
	return s
}

// twoComms makes a two-rank communicator and a stream on each device.
func twoComms(t *testing.T, ctx context.Context, devs []*cuda.Device) ([2]*Comm, [2]*cuda.Stream) {
	id, err := NewUniqueID()
	if err != nil {
		t.Fatal(err)
	}
	var comms [2]*Comm
	var streams [2]*cuda.Stream
	var errs [2]error
	var wg sync.WaitGroup
	for k := range 2 {
		streams[k] = testenv.NewStream(t, devs[k])
		wg.Go(func() { comms[k], errs[k] = NewComm(ctx, devs[k], 2, k, id) })
	}
	wg.Wait()
	if err := errors.Join(errs[:]...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { comms[0].Close(); comms[1].Close() })
	return comms, streams
}

// run reshards c over mesh m on both ranks and checks the gathered result.
func (c reshardCase) run(ctx context.Context, comms [2]*Comm, streams [2]*cuda.Stream, m dist.Mesh, r *rand.Rand) error {
	gl, err := layout.Dense(c.shape, c.dt.Itemsize(), layout.C)
	if err != nil {
		return err
	}
	want := make([]byte, gl.RequiredSizeInBytes())
	for i := range want {
		want[i] = byte(r.Uint32())
	}
	got := make([]byte, len(want))
	orders := [2][2]layout.Order{}
	for k := range 2 {
		orders[k] = [2]layout.Order{layout.Perm(r.Perm(len(c.shape))...), layout.Perm(r.Perm(len(c.shape))...)}
	}
	var errs [2]error
	var wg sync.WaitGroup
	for k := range 2 {
		wg.Go(func() { errs[k] = c.rank(ctx, comms[k], streams[k], m, orders[k], gl, want, got) })
	}
	wg.Wait()
	if err := errors.Join(errs[:]...); err != nil {
		return err
	}
	if !bytes.Equal(got, want) {
		return fmt.Errorf("gathered tensor differs at byte %d of %d", firstDiff(got, want), len(got))
	}
	return nil
}

// rank runs one rank of c: scatter from want, reshard, gather into got
// (the rank whose coordinate on every replicated axis is 0 stores).
func (c reshardCase) rank(ctx context.Context, cm *Comm, s *cuda.Stream, m dist.Mesh, ord [2]layout.Order, gl layout.Layout, want, got []byte) error {
	from, err := dist.NewSharding(c.shape, m, c.from)
	if err != nil {
		return err
	}
	to, err := dist.NewSharding(c.shape, m, c.to)
	if err != nil {
		return err
	}
	src, err := localView(cm, from, c.dt, ord[0])
	if err != nil {
		return err
	}
	defer src.Local().Close()
	dst, err := localView(cm, to, c.dt, ord[1])
	if err != nil {
		return err
	}
	defer dst.Local().Close()
	rs, err := dist.NewReshard(cm, dst, src)
	if err != nil {
		return err
	}
	defer rs.Close()
	wv, _ := memview.FromHost(want, flat(len(want)))
	wv, _ = wv.View(gl, c.dt)
	gv, _ := memview.FromHost(got, flat(len(got)))
	gv, _ = gv.View(gl, c.dt)
	if err := src.LoadFrom(wv, s); err != nil {
		return err
	}
	if c.settle {
		if err := rs.Settle(); err != nil {
			return err
		}
	}
	if err := rs.Run(ctx, s); err != nil {
		return err
	}
	if err := cm.WaitStream(ctx, s); err != nil {
		return err
	}
	if to.Replicas() > 1 && cm.Rank() != 0 {
		// On two ranks a replicated sharding gives both the same block:
		// rank 0 stores it, the other's bytes are the same.
		return nil
	}
	return dst.StoreTo(gv, s)
}

// localView returns rank cm.Rank()'s part of sh on cm's device, in order.
func localView(cm *Comm, sh dist.Sharding, dt layout.DType, order layout.Order) (*dist.DistView, error) {
	l, err := sh.LocalLayout(cm.Rank(), dt, order)
	if err != nil {
		return nil, err
	}
	buf, err := cm.Device().Alloc(int(max(l.RequiredSizeInBytes(), 1)), nil)
	if err == nil {
		err = cm.Device().LegacyStream().Synchronize()
	}
	if err != nil {
		return nil, err
	}
	v, err := memview.FromOwnedBuffer(buf, l, dt)
	if err != nil {
		buf.Close()
		return nil, err
	}
	return dist.NewDistView(sh, dt, cm.Rank(), v)
}

func flat(n int) layout.Layout {
	l, _ := layout.Dense([]int64{int64(n)}, 1, layout.C)
	return l
}
