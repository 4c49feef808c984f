package kernels

import "testing"

func TestResidentGrid(t *testing.T) {
	for _, c := range []struct {
		grid    uint32
		sm, fit int
		want    uint32
		why     string
	}{
		{1056, 132, 7, 924, "8 blocks an SM asked, 7 fit"},
		{1056, 132, 8, 1056, "all fit"},
		{1056, 132, 12, 1056, "more fit than asked"},
		{40, 132, 1, 40, "fewer tiles than the first wave"},
		{1056, 132, 0, 1056, "limits unknown"},
		{1056, 132, -1, 1056, "limits unknown"},
	} {
		if got := residentGrid(c.grid, c.sm, c.fit); got != c.want {
			t.Errorf("residentGrid(%d, %d, %d) = %d, want %d (%s)", c.grid, c.sm, c.fit, got, c.want, c.why)
		}
	}
}
