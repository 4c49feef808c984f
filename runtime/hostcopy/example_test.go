package hostcopy_test

import (
	"fmt"

	"github.com/stridekit/stridekit/layout"
	"github.com/stridekit/stridekit/runtime/hostcopy"
)

// Transpose a 2×3 matrix of bytes: src holds it in F (column-major) order,
// dst receives it in C (row-major) order.
func ExampleCopy() {
	src := []byte{1, 4, 2, 5, 3, 6} // columns (1,4), (2,5), (3,6)
	sl, _ := layout.Dense([]int64{2, 3}, 1, layout.F)
	dl, _ := layout.Dense([]int64{2, 3}, 1, layout.C)
	dst := make([]byte, dl.RequiredSizeInBytes())
	if err := hostcopy.Copy(dst, dl, src, sl); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(dst)

	// Broadcast a row into every row of dst.
	row, _ := layout.New([]int64{3}, nil, 1)
	if err := hostcopy.Copy(dst, dl, []byte{7, 8, 9}, row); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(dst)
	// Output:
	// [1 2 3 4 5 6]
	// [7 8 9 7 8 9]
}
