package layout_test

import (
	"errors"
	"fmt"

	"github.com/stridekit/stridekit/layout"
)

func ExampleNew() {
	// A 2×3 array of float32 with its rows reversed (NumPy a[::-1]):
	// index 0 is the first element of the last row.
	l, err := layout.New([]int64{2, 3}, []int64{-3, 1}, 4)
	if err != nil {
		panic(err)
	}
	fmt.Println(l, l.MinOffset(), l.MaxOffset(), l.RequiredSizeInBytes())
	// Output: (2,3):(-3,1)x4 -3 2 24
}

func ExampleDense() {
	c, _ := layout.Dense([]int64{2, 3, 4}, 8, layout.C)
	f, _ := layout.Dense([]int64{2, 3, 4}, 8, layout.F)
	p, _ := layout.Dense([]int64{2, 3, 4}, 8, layout.Perm(2, 0, 1)) // dim 2 slowest, dim 1 fastest
	fmt.Println(c)
	fmt.Println(f)
	fmt.Println(p, p.StrideOrder())
	// Output:
	// (2,3,4):(12,4,1)x8
	// (2,3,4):(1,2,6)x8
	// (2,3,4):(3,1,6)x8 [2 0 1]
}

func ExampleDenseLike() {
	// A transposed view; a compact copy of it keeps dim 0 fastest.
	t, _ := layout.New([]int64{3, 2}, []int64{1, 3}, 4)
	k, _ := layout.DenseLike(t, layout.Keep)
	c, _ := layout.DenseLike(t, layout.C)
	fmt.Println(k, c)
	// Output: (3,2):(1,3)x4 (3,2):(2,1)x4
}

func ExampleLayout_Permute() {
	l, _ := layout.Dense([]int64{2, 3}, 4, layout.C)
	t, _ := l.Permute(1, 0)
	fmt.Println(t, t.IsContiguousC(), t.IsContiguousF())
	// Output: (3,2):(1,3)x4 false true
}

func ExampleLayout_Slice() {
	l, _ := layout.Dense([]int64{4, 5}, 4, layout.C)
	// a[1:3, ::-2]: rows 1 and 2, columns 4, 2, 0.
	v, off, _ := l.Slice(layout.Span(1, 3), layout.Range{Start: layout.Omit, Stop: layout.Omit, Step: -2})
	fmt.Println(v, off)
	// Output: (2,3):(5,-2)x4 9
}

func ExampleLayout_Index() {
	l, _ := layout.Dense([]int64{4, 5}, 4, layout.C)
	col, off, _ := l.Index(1, -1) // a[:, -1]
	fmt.Println(col, off)
	// Output: (4):(5)x4 4
}

func ExampleLayout_BroadcastTo() {
	row, _ := layout.Dense([]int64{3}, 4, layout.C)
	b, _ := row.BroadcastTo(2, 3)
	fmt.Println(b, b.IsUnique())
	// Output: (2,3):(0,1)x4 false
}

func ExampleLayout_Reshape() {
	l, _ := layout.Dense([]int64{2, 3, 4}, 4, layout.C)
	r, _ := l.Reshape(6, -1)
	fmt.Println(r)
	t, _ := l.Permute(2, 1, 0)
	_, err := t.Reshape(-1)
	fmt.Println(errors.Is(err, layout.ErrNotViewable))
	// Output:
	// (6,4):(4,1)x4
	// true
}

func ExampleLayout_Flatten() {
	l, _ := layout.Dense([]int64{2, 3, 4}, 4, layout.C)
	f, _ := l.Flatten(1, -1)
	fmt.Println(f)
	// Output: (2,12):(12,1)x4
}

func ExampleLayout_Repack() {
	// 3 rows of 4 float32 seen as 3 rows of 2 complex64.
	l, _ := layout.Dense([]int64{3, 4}, 4, layout.C)
	c, _ := l.Repack(8)
	fmt.Println(c)
	// Output: (3,2):(2,1)x8
}

func ExampleLayout_Squeeze() {
	l, _ := layout.Dense([]int64{1, 3, 1}, 2, layout.C)
	s, _ := l.Squeeze()
	u, _ := s.Unsqueeze(0, -1)
	fmt.Println(s, u)
	// Output: (3):(1)x2 (1,3,1):(3,1,1)x2
}

func ExamplePackedLayout() {
	// 4 rows of 6 fp4 values, packed two to a byte: 4 rows of 3 bytes.
	p, _ := layout.PackedLayout(layout.Float4E2M1, []int64{4, 6}, nil)
	fmt.Println(p)
	_, err := layout.PackedLayout(layout.Float4E2M1, []int64{4, 7}, nil)
	fmt.Println(err)
	// Output:
	// (4,3):(3,1)x1
	// layout: bad dtype: float4_e2m1fn: extent 7 of packing dim 1 is not a multiple of 2: elements would straddle bytes
}

func ExampleParseDType() {
	d, _ := layout.ParseDType("bf16")
	fmt.Println(d, d.Code(), d.Bits(), d.Itemsize())
	// Output: bfloat16 4 16 2
}
