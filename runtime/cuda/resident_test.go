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

// TestMemoryBandwidth: the peak from the memory clock (kHz) and bus width
// (bits), two transfers a clock, for the clocks and widths the drivers of
// an H100 SXM and an H200 report; 0 where they are unknown.
func TestMemoryBandwidth(t *testing.T) {
	for _, c := range []struct {
		d    *Device
		want int64
	}{
		{&Device{memClockKHz: 2619000, busBits: 5120}, 3352320000000},
		{&Device{memClockKHz: 3201000, busBits: 6144}, 4916736000000},
		{&Device{busBits: 6144}, 0},
		{&Device{}, 0},
		{nil, 0},
	} {
		if got := c.d.MemoryBandwidth(); got != c.want {
			t.Errorf("MemoryBandwidth of %+v = %d, want %d", c.d, got, c.want)
		}
	}
}
