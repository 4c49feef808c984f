package dist_test

import (
	"context"
	"fmt"
	"log"
	"sync"
	"time"

	"github.com/stridekit/stridekit/layout"
	"github.com/stridekit/stridekit/runtime/dist"
	"github.com/stridekit/stridekit/runtime/memview"
)

// Reshard a 4×4 matrix from rows to columns over two ranks of a host
// group, each rank a goroutine: rank r starts with rows 2r and 2r+1 and
// ends with columns 2r and 2r+1.
func ExampleNewReshard() {
	mesh, _ := dist.NewMesh(2)
	shape := []int64{4, 4}
	rows, _ := dist.NewSharding(shape, mesh, dist.Spec{{0}})      // dim 0 split over mesh axis 0
	cols, _ := dist.NewSharding(shape, mesh, dist.Spec{nil, {0}}) // dim 1 split over mesh axis 0
	group, _ := dist.NewHostGroup(2)

	out := make([][]float32, 2)
	var wg sync.WaitGroup
	for r, t := range group {
		wg.Go(func() {
			a := make([]float32, 8) // rows 2r, 2r+1 of the matrix 0..15
			for k := range a {
				a[k] = float32(8*r + k)
			}
			la, _ := rows.LocalLayout(r, layout.Float32, layout.C)
			va, _ := memview.FromHost(a, la)
			src, _ := dist.NewDistView(rows, layout.Float32, r, va)

			out[r] = make([]float32, 8) // columns 2r, 2r+1, row-major 4×2
			lb, _ := cols.LocalLayout(r, layout.Float32, layout.C)
			vb, _ := memview.FromHost(out[r], lb)
			dst, _ := dist.NewDistView(cols, layout.Float32, r, vb)

			rs, err := dist.NewReshard(t, dst, src)
			if err != nil {
				log.Fatal(err)
			}
			defer rs.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := rs.Run(ctx, nil); err != nil { // host memory: no stream
				log.Fatal(err)
			}
		})
	}
	wg.Wait()
	fmt.Println("rank 0:", out[0])
	fmt.Println("rank 1:", out[1])
	// Output:
	// rank 0: [0 1 4 5 8 9 12 13]
	// rank 1: [2 3 6 7 10 11 14 15]
}

// The blocks of a 5×4 tensor whose rows are split over axis 0 of a 2×2
// mesh and columns over axis 1: the rows cut unevenly, 2 and 3.
func ExampleSharding_BlockOf() {
	mesh, _ := dist.NewMesh(2, 2)
	s, _ := dist.NewSharding([]int64{5, 4}, mesh, dist.Spec{{0}, {1}})
	for r := range mesh.Size() {
		c, _ := mesh.Coords(r)
		b, _ := s.BlockOf(r)
		fmt.Println(r, c, b)
	}
	// Output:
	// 0 [0 0] [0:2, 0:2]
	// 1 [0 1] [0:2, 2:4]
	// 2 [1 0] [2:5, 0:2]
	// 3 [1 1] [2:5, 2:4]
}

// The plan of one rank, computed without running anything: rows split
// over 4 ranks to columns split over the same 4, where each rank keeps a
// sixteenth and exchanges a sixteenth with each other rank.
func ExampleReshard_Plan() {
	mesh, _ := dist.NewMesh(4)
	shape := []int64{8, 8}
	rows, _ := dist.NewSharding(shape, mesh, dist.Spec{{0}})
	cols, _ := dist.NewSharding(shape, mesh, dist.Spec{nil, {0}})
	group, _ := dist.NewHostGroup(4)
	src, _ := dist.NewHostDistView(rows, layout.Float64, 1)
	dst, _ := dist.NewHostDistView(cols, layout.Float64, 1)
	rs, err := dist.NewReshard(group[1], dst, src)
	if err != nil {
		log.Fatal(err)
	}
	defer rs.Close()
	fmt.Println(rs.Plan())
	// Output:
	// rank 1: keep 32 B, send 96 B to 3 ranks, receive 96 B from 3 ranks
	//   keep [2:4, 2:4] 32 B
	//   to 0: [2:4, 0:2] 32 B
	//   to 2: [2:4, 4:6] 32 B
	//   to 3: [2:4, 6:8] 32 B
	//   from 0: [0:2, 2:4] 32 B
	//   from 2: [4:6, 2:4] 32 B
	//   from 3: [6:8, 2:4] 32 B
}
