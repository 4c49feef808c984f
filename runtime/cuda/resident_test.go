package cuda

import "testing"

func TestResidentBlocks(t *testing.T) {
	h100 := &Device{smThreads: 2048, smShared: 233472, smBlocks: 32, reservedShared: 1024}
	for _, c := range []struct {
		d               *Device
		threads, shared int
		want            int
	}{
		{h100, 256, 31024, 7},  // shared memory: 7 × 32048 ≤ 233472 < 8 × 32048
		{h100, 256, 19440, 8},  // threads: 8 × 256 = 2048
		{h100, 128, 0, 16},     // threads
		{h100, 32, 0, 32},      // the block limit
		{h100, 256, 232448, 1}, // one block fills the SM
		{h100, 256, 232449, 0}, // none fits
		{&Device{}, 256, 1024, 0},
		{nil, 256, 1024, 0},
		{h100, 0, 1024, 0},
		{h100, 256, -1, 0},
	} {
		if got := c.d.ResidentBlocks(c.threads, c.shared); got != c.want {
			t.Errorf("ResidentBlocks(%d, %d) = %d, want %d (device %+v)", c.threads, c.shared, got, c.want, c.d)
		}
	}
}
