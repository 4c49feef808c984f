package main

import (
	"errors"
	"fmt"

	"github.com/stridekit/stridekit/kernels"
	"github.com/stridekit/stridekit/runtime/cuda"
	"github.com/stridekit/stridekit/runtime/memview"
)

// peerArrays is one direction of a peer case: the source array on device
// s of the run, the destination array on the other, and the views.
type peerArrays struct {
	s, d       int
	sbuf, dbuf *cuda.Buffer
	dst, src   *memview.StridedMemoryView
	moved      int
}

// arrays allocates the arrays of b with its source on device s of env and
// places the views in them.
func (env *peerEnv) arrays(b *built, s int) (*peerArrays, error) {
	a := &peerArrays{s: s, d: 1 - s, moved: int(b.Moved)}
	var err error
	if a.sbuf, err = env.dev[s].Alloc(int(roundUp(max(b.SrcBytes, b.Moved), bufAlign)), nil); err != nil {
		return nil, err
	}
	if a.dbuf, err = env.dev[a.d].Alloc(int(roundUp(max(b.DstBytes, b.Moved), bufAlign)), nil); err != nil {
		return nil, errors.Join(err, a.close())
	}
	sw, err := deviceViews(a.sbuf)
	if err != nil {
		return nil, errors.Join(err, a.close())
	}
	dw, err := deviceViews(a.dbuf)
	if err != nil {
		return nil, errors.Join(err, a.close())
	}
	item := int64(b.Item)
	a.dst, a.src, err = placeViews(dw, b.DstOff*item, b.Dst, sw, b.SrcOff*item, b.Src, b.Case.DType)
	if err != nil {
		return nil, errors.Join(err, a.close())
	}
	return a, nil
}

func (a *peerArrays) close() error {
	var err error
	if a.sbuf != nil {
		err = a.sbuf.Close()
	}
	if a.dbuf != nil {
		err = errors.Join(err, a.dbuf.Close())
	}
	return err
}

// copyOn returns the stridekit copy queued on device on's stream.
func (env *peerEnv) copyOn(a *peerArrays, on int) func() error {
	return func() error { return a.dst.CopyFrom(a.src, env.st[on]) }
}

// memcpyOn returns cuMemcpyPeerAsync of the bytes the copy writes, queued
// on device on's stream.
func (env *peerEnv) memcpyOn(a *peerArrays, on int) func() error {
	return func() error {
		return env.dev[a.d].MemcpyPeerAsync(a.dbuf.Ptr(), a.sbuf.Ptr(), env.dev[a.s], a.moved, env.st[on])
	}
}

// check fills a's source with b's pattern, poisons its destination, copies
// on device on's stream and compares with want.
func (env *peerEnv) check(b *built, a *peerArrays, on int, src, want []byte) error {
	sd, dd := env.dev[a.s], env.dev[a.d]
	if err := sd.CopyHtoD(a.sbuf.Ptr(), src); err != nil {
		return err
	}
	if err := sd.Synchronize(); err != nil {
		return err
	}
	if err := dd.MemsetAsync(a.dbuf.Ptr(), poisonByte, int(b.DstBytes), env.st[a.d]); err != nil {
		return err
	}
	if err := env.st[a.d].Synchronize(); err != nil {
		return err
	}
	if err := env.copyOn(a, on)(); err != nil {
		return err
	}
	if err := env.st[on].Synchronize(); err != nil {
		return err
	}
	read := func(off int64, p []byte) error { return dd.CopyDtoH(p, a.dbuf.Ptr()+cuda.DevicePtr(off)) }
	msg, err := compareDst(b, read, want)
	if err == nil && msg != "" {
		err = fmt.Errorf("mismatch (%s on %v): %s", map[bool]string{true: "push", false: "pull"}[on == a.s], env.dev[on], msg)
	}
	return err
}

// measure checks and times case b into r.
func (env *peerEnv) measure(b *built, r *peerCaseResult) error {
	if err := checkSize(b); err != nil {
		return err
	}
	ab, err := env.arrays(b, 0)
	if err != nil {
		return err
	}
	defer ab.close()
	ba, err := env.arrays(b, 1)
	if err != nil {
		return err
	}
	defer ba.close()
	src := sourcePattern(b)
	want, err := referenceDst(b, src)
	if err != nil {
		return err
	}
	for _, c := range []struct {
		a  *peerArrays
		on int
	}{{ab, 0}, {ab, 1}, {ba, 1}} {
		if err := env.check(b, c.a, c.on, src, want); err != nil {
			return err
		}
	}
	if err := settle(ab, ba); err != nil {
		return err
	}
	cp, err := ab.dst.Explain(ab.src)
	if err != nil {
		return err
	}
	r.Plan = cp.String()
	if err := env.times(ab, ba, r); err != nil {
		return err
	}
	return errors.Join(env.st[0].Synchronize(), env.st[1].Synchronize())
}

// settle makes the copies of each pair run the kernels a repeated
// CopyFrom settles on (memview.BoundCopy.Settle) before they are timed,
// so that no background compile swaps a kernel in mid-measurement. Past
// the process's limit of specialised kernels a copy stays generic, as a
// program's would.
func settle(ps ...*peerArrays) error {
	for _, a := range ps {
		bc, err := memview.Bind(a.dst, a.src)
		if err == nil {
			err = bc.Settle()
		}
		if err != nil && !errors.Is(err, kernels.ErrSpecialiseLimit) {
			return err
		}
	}
	return nil
}

// times fills r's times and percentages.
func (env *peerEnv) times(ab, ba *peerArrays, r *peerCaseResult) error {
	var err error
	if r.MemcpyS, err = env.timeOn(0, env.memcpyOn(ab, 0)); err != nil {
		return err
	}
	if r.PushS, err = env.timeOn(0, env.copyOn(ab, 0)); err != nil {
		return err
	}
	if r.PullS, err = env.timeOn(1, env.copyOn(ab, 1)); err != nil {
		return err
	}
	x, y := env.copyOn(ab, 0), env.copyOn(ba, 1) // each pushed
	if r.PullS < r.PushS {
		x, y = env.copyOn(ba, 0), env.copyOn(ab, 1) // each pulled
	}
	if r.BothS, err = env.timeBoth(x, y); err != nil {
		return err
	}
	if r.BothMemS, err = env.timeBoth(env.memcpyOn(ab, 0), env.memcpyOn(ba, 1)); err != nil {
		return err
	}
	r.PctPush, r.PctPull = 100*r.MemcpyS/r.PushS, 100*r.MemcpyS/r.PullS
	r.PctBest, r.PctBoth = max(r.PctPush, r.PctPull), 100*r.BothMemS/r.BothS
	return nil
}
