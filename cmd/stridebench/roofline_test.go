package main

import (
	"testing"

	"pgregory.net/rapid"

	"github.com/stridekit/stridekit/layout"
)

// bruteSectors counts the sectors of every byte of every element of l
// (index 0 at item off of an array starting at a sector boundary).
func bruteSectors(l layout.Layout, off int64) int64 {
	item := int64(l.Itemsize())
	seen := map[int64]bool{}
	eachOffset(l, func(o int64) {
		for b := (off + o) * item; b < (off+o+1)*item; b++ {
			seen[b/sectorBytes] = true
		}
	})
	return int64(len(seen))
}

func TestTouchedSectorsHand(t *testing.T) {
	for _, tc := range []struct {
		name string
		l    string
		off  int64
		want int64
	}{
		{"dense 16×16 f32: 1 KiB", "(16,16):(16,1)x4", 0, 32},
		{"its transpose", "(16,16):(1,16)x4", 0, 32},
		{"a[:, ::2] of 4×16 f32: every sector of each 64-byte row", "(4,8):(16,2)x4", 0, 8},
		{"a[:, ::8] of 4×64 u8: both sectors of each 64-byte row", "(4,8):(64,8)x1", 0, 8},
		{"a broadcast row of 8 f32: read once", "(4,8):(0,1)x4", 0, 1},
		{"a scalar broadcast", "(4,8):(0,0)x4", 3, 1},
		{"4 bytes straddling a sector boundary", "(4):(1)x1", 30, 2},
		{"a flipped row: index 0 at item 7", "(8):(-1)x4", 7, 1},
		{"12-byte items across sectors", "(8):(1)x12", 0, 3},
		{"overlapping strides (not unique)", "(4,4):(1,1)x4", 0, 1},
	} {
		l, err := layout.Parse(tc.l)
		if err != nil {
			t.Fatal(err)
		}
		if got := touchedSectors(l, tc.off); got != tc.want {
			t.Errorf("%s: %d sectors, want %d", tc.name, got, tc.want)
		}
		if got := bruteSectors(l, tc.off); got != tc.want {
			t.Errorf("%s: brute force says %d, want %d (the table is wrong)", tc.name, got, tc.want)
		}
	}
}

// TestTouchedSectorsBrute checks the row walk against visiting every
// element, on random small views of every kind (strided, reversed,
// broadcast, overlapping) and item sizes.
func TestTouchedSectorsBrute(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		nd := rapid.IntRange(1, 4).Draw(t, "nd")
		item := rapid.SampledFrom([]int{1, 2, 3, 4, 8, 12, 16}).Draw(t, "item")
		shape := make([]int64, nd)
		strides := make([]int64, nd)
		for k := range shape {
			shape[k] = int64(rapid.IntRange(1, 7).Draw(t, "extent"))
			strides[k] = int64(rapid.IntRange(-40, 40).Draw(t, "stride"))
		}
		l, err := layout.New(shape, strides, item)
		if err != nil {
			t.Fatal(err)
		}
		off := -l.MinOffset() + int64(rapid.IntRange(0, 40).Draw(t, "pad"))
		got, want := touchedSectors(l, off), bruteSectors(l, off)
		if got != want {
			t.Fatalf("%v at item %d: %d sectors, brute force %d", l, off, got, want)
		}
	})
}

func TestRooflineOfCases(t *testing.T) {
	for _, tc := range []struct {
		line string
		want int64 // bytes DRAM moves
	}{
		{"t f32 64x64 src=perm(1,0)", 2 * 64 * 64 * 4},
		{"s f32 64x128 src=slice(:,::2)", 64*128*4 + 64*64*4},
		{"s3 u8 64x96 src=slice(:,::3)", 64*96 + 64*32},
		{"b f32 1x64 src=bcast(64,64)", 64*4 + 64*64*4},
		{"d f32 64x64 dst=slice(:,::2)", 64*64*4 + 64*128*4},
	} {
		b := mustBuild(t, tc.line)
		if got := rooflineBytes(b); got != tc.want {
			t.Errorf("%s: roofline %d bytes, want %d", tc.line, got, tc.want)
		}
	}
}

func TestBitmap(t *testing.T) {
	for _, r := range [][2]int64{{0, 0}, {0, 63}, {63, 64}, {5, 200}, {64, 127}, {130, 130}} {
		m := newBitmap(256)
		m.setRange(r[0], r[1])
		if got := m.count(); got != r[1]-r[0]+1 {
			t.Errorf("setRange(%d, %d): %d bits set", r[0], r[1], got)
		}
		for i := int64(0); i < 256; i++ {
			in := i >= r[0] && i <= r[1]
			if (m[i/64]>>(i%64)&1 == 1) != in {
				t.Fatalf("setRange(%d, %d): bit %d is %v", r[0], r[1], i, !in)
			}
		}
	}
}

// rooflineBytes returns the bytes DRAM must move for the copy of b: 32 times
// the number of distinct sectors the src view touches plus those the dst
// view touches. Arrays start bufAlign-aligned, so sector boundaries are
// known.
func rooflineBytes(b *built) int64 {
	src, dst := sectors(b)
	return sectorBytes * (src + dst)
}
