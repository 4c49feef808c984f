package dist

import (
	"context"
	"sync"
	"testing"

	"github.com/stridekit/stridekit/layout"
)

// BenchmarkReshardHost reshards a 1024×1024 float32 matrix from rows to
// columns over a host group of 4 ranks: one op is one Run on every rank,
// its bytes the whole matrix.
func BenchmarkReshardHost(b *testing.B) {
	const n = 4
	shape := []int64{1024, 1024}
	m, _ := NewMesh(n)
	rows, _ := NewSharding(shape, m, Spec{{0}})
	cols, _ := NewSharding(shape, m, Spec{nil, {0}})
	ts, _ := NewHostGroup(n)
	rs := make([]*Reshard, n)
	for r := range n {
		src, _ := NewHostDistView(rows, layout.Float32, r)
		dst, _ := NewHostDistView(cols, layout.Float32, r)
		var err error
		if rs[r], err = NewReshard(ts[r], dst, src); err != nil {
			b.Fatal(err)
		}
		defer rs[r].Close()
	}
	b.SetBytes(1024 * 1024 * 4)
	b.ResetTimer()
	var wg sync.WaitGroup
	for r := range n {
		wg.Go(func() {
			for range b.N {
				if err := rs[r].Run(context.Background(), nil); err != nil {
					b.Error(err)
					ts[r].(*HostTransport).Abort(err) // the others stop too
					return
				}
			}
		})
	}
	wg.Wait()
}
