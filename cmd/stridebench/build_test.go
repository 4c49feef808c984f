package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/stridekit/stridekit/layout"
)

func mustCase(t *testing.T, line string) *Case {
	t.Helper()
	c, err := parseCaseLine(line, "test", 1)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func mustBuild(t *testing.T, line string) *built {
	t.Helper()
	b, err := buildCase(mustCase(t, line))
	if err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	return b
}

// TestBuildViews checks the views of each kind of case against layouts
// worked out by hand.
func TestBuildViews(t *testing.T) {
	for _, tc := range []struct {
		line               string
		src, dst           string // layout.Layout.String
		srcOff, dstOff     int64  // items from each array's index 0
		srcStart, dstStart int64  // bytes from each array's start to the view's lowest byte
		srcBytes, dstBytes int64
	}{
		// a.T of a 4×8 float32 array into a dense 8×4 one.
		{"t f32 4x8 src=perm(1,0)", "(8,4):(1,8)x4", "(8,4):(4,1)x4", 0, 0, 0, 0, 128, 128},
		// NCHW (2,3,4,5) into a dense NHWC (2,4,5,3) array viewed as NCHW.
		{"n f16 2x3x4x5 dst=perm(0,3,1,2)", "(2,3,4,5):(60,20,5,1)x2", "(2,3,4,5):(60,1,15,3)x2", 0, 0, 0, 0, 240, 240},
		// NHWC (2,4,5,3) viewed as NCHW.
		{"h f16 2x4x5x3 src=perm(0,3,1,2)", "(2,3,4,5):(60,1,15,3)x2", "(2,3,4,5):(60,20,5,1)x2", 0, 0, 0, 0, 240, 240},
		// Rows 1..4 and columns 8, 5, 2 of a 6×10 array: index 0 is item
		// 1·10+8 = 18, the lowest element (row 1, column 2) item 12.
		{"s f32 6x10 src=slice(1:5,8:1:-3)", "(4,3):(10,-3)x4", "(4,3):(3,1)x4", 18, 0, 48, 0, 240, 48},
		// A flipped last dim: index 0 is item 3, the lowest byte is byte 0.
		{"f u8 3x4 src=flip(1)", "(3,4):(4,-1)x1", "(3,4):(4,1)x1", 3, 0, 0, 0, 12, 12},
		// One row broadcast to 4 rows.
		{"b f32 1x8 src=bcast(4,8)", "(4,8):(0,1)x4", "(4,8):(8,1)x4", 0, 0, 0, 0, 32, 128},
		// a[:, ::2].T.
		{"st f32 4x8 src=slice(:,::2).perm(1,0)", "(4,4):(2,8)x4", "(4,4):(4,1)x4", 0, 0, 0, 0, 128, 64},
		// a[:, 2, 1:4]: the index drops dim 1; index 0 is item 2·5+1 = 11.
		{"i u8 3x4x5 src=slice(:,2,1:4)", "(3,3):(20,1)x1", "(3,3):(3,1)x1", 11, 0, 11, 0, 60, 9},
		// A dst that takes every other column of a 4×8 array (inferred).
		{"ds f32 4x4 dst=slice(:,::2)", "(4,4):(4,1)x4", "(4,4):(8,2)x4", 0, 0, 0, 0, 64, 128},
		// A dst flipped along dim 0.
		{"df f32 4x4 dst=flip(0)", "(4,4):(4,1)x4", "(4,4):(-4,1)x4", 0, 12, 0, 0, 64, 64},
		// Rows 1..2 of a 4×4 dst array (dstbase given).
		{"db u8 2x4 dst=slice(1:3) dstbase=4x4", "(2,4):(4,1)x1", "(2,4):(4,1)x1", 0, 4, 0, 4, 8, 16},
		// Odd item size: 3-byte items, transposed.
		{"x x3 2x5 src=perm(1,0)", "(5,2):(1,5)x3", "(5,2):(2,1)x3", 0, 0, 0, 0, 30, 30},
	} {
		b := mustBuild(t, tc.line)
		if got := b.Src.String(); got != tc.src {
			t.Errorf("%s: src %s, want %s", tc.line, got, tc.src)
		}
		if got := b.Dst.String(); got != tc.dst {
			t.Errorf("%s: dst %s, want %s", tc.line, got, tc.dst)
		}
		if b.SrcOff != tc.srcOff || b.DstOff != tc.dstOff {
			t.Errorf("%s: offsets src %d dst %d, want %d %d", tc.line, b.SrcOff, b.DstOff, tc.srcOff, tc.dstOff)
		}
		if b.SrcStart != tc.srcStart || b.DstStart != tc.dstStart {
			t.Errorf("%s: starts src %d dst %d, want %d %d", tc.line, b.SrcStart, b.DstStart, tc.srcStart, tc.dstStart)
		}
		if b.SrcBytes != tc.srcBytes || b.DstBytes != tc.dstBytes {
			t.Errorf("%s: array bytes src %d dst %d, want %d %d", tc.line, b.SrcBytes, b.DstBytes, tc.srcBytes, tc.dstBytes)
		}
		if b.Moved != b.Dst.Volume()*int64(b.Item) {
			t.Errorf("%s: moved %d", tc.line, b.Moved)
		}
		// Every view lies inside its array.
		if b.SrcStart < 0 || b.SrcStart+b.Src.RequiredSizeInBytes() > b.SrcBytes {
			t.Errorf("%s: src view [%d,+%d) outside its %d-byte array", tc.line, b.SrcStart, b.Src.RequiredSizeInBytes(), b.SrcBytes)
		}
		if b.DstStart < 0 || b.DstStart+b.Dst.RequiredSizeInBytes() > b.DstBytes {
			t.Errorf("%s: dst view [%d,+%d) outside its %d-byte array", tc.line, b.DstStart, b.Dst.RequiredSizeInBytes(), b.DstBytes)
		}
	}
}

func TestBuildErrors(t *testing.T) {
	for _, tc := range []struct {
		line string
		is   error
		msg  string
	}{
		{"e f32 4x4 src=perm(0)", layout.ErrAxis, "src: operation 1 perm(0)"},
		{"e f32 2x8 src=bcast(4,8)", layout.ErrShape, "src: operation 1 bcast(4,8)"},
		{"e f32 4x4 src=slice(:,:,:)", layout.ErrAxis, "slice"},
		{"e f32 4x4 src=flip(2)", layout.ErrAxis, "flip dim 2"},
		{"e f32 4x4 src=slice(9)", layout.ErrRange, "index 9"},
		{"e f32 4x4 dst=slice(1:3) dstbase=5x4", errCase, "dst view shape [2 4] differs from src view shape [4 4]"},
		{"e f32 4x4 dst=bcast(4,4)", layout.ErrOverlappingDst, "broadcast dst"},
		{"e f32 4x4 dst=slice(1:3)", layout.ErrShape, "dstbase"},
		{"e f32 4x4 dst=perm(1,0,2)", layout.ErrAxis, "3 dims for a view of 2"},
		{"e f32 4x4 src=slice(0:0)", errCase, "no elements"},
		{"e f32 1099511627776x1099511627776", layout.ErrOverflow, "base shape"},
	} {
		_, err := buildCase(mustCase(t, tc.line))
		if err == nil {
			t.Errorf("%s: no error", tc.line)
			continue
		}
		if !errors.Is(err, errCase) || !errors.Is(err, tc.is) {
			t.Errorf("%s: %v is not errCase and %v", tc.line, err, tc.is)
		}
		if !strings.Contains(err.Error(), tc.msg) || !strings.Contains(err.Error(), "case e (test:1)") {
			t.Errorf("%s: error %q does not name the case and say %q", tc.line, err, tc.msg)
		}
	}
}

func TestScaleExtent(t *testing.T) {
	prev := int64(0)
	for e := int64(1); e < 5000; e += 7 {
		for _, f := range []float64{0, 0.01, 0.5, 1} {
			s := scaleExtent(e, f)
			if e <= shrinkMin && s != e {
				t.Errorf("scaleExtent(%d, %v) = %d: small extents stay", e, f, s)
			}
			if e > shrinkMin && (s < shrinkMin || s > e) {
				t.Errorf("scaleExtent(%d, %v) = %d outside [%d, %d]", e, f, s, shrinkMin, e)
			}
		}
		if s := scaleExtent(e, 0.3); s < prev {
			t.Errorf("scaleExtent is not monotone at %d", e)
		} else {
			prev = s
		}
		if scaleExtent(e, 1) != e {
			t.Errorf("scaleExtent(%d, 1) = %d", e, scaleExtent(e, 1))
		}
	}
}

func TestShrinkCase(t *testing.T) {
	c := mustCase(t, "t f32 16384x16384 src=perm(1,0)")
	s, err := shrinkCase(c, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	b, err := buildCase(s)
	if err != nil {
		t.Fatal(err)
	}
	if b.Moved > 1<<20 || b.Moved < 1<<19 {
		t.Errorf("shrunk to %d bytes, want within (512 KiB, 1 MiB]", b.Moved)
	}
	if b.Src.Shape()[0] != b.Src.Shape()[1] || b.Src.Strides()[0] != 1 {
		t.Errorf("shrunk transpose is %v", b.Src)
	}
	if c.Base[0] != 16384 {
		t.Errorf("shrinkCase changed its argument: %v", c.Base)
	}

	// A broadcast keeps its target consistent with its base.
	bc := mustCase(t, "b f32 1x16384 src=bcast(16384,16384)")
	s, err = shrinkCase(bc, 64<<10)
	if err != nil {
		t.Fatal(err)
	}
	if b, err = buildCase(s); err != nil || b.Moved > 64<<10 {
		t.Errorf("shrunk broadcast %v: %v, moves %d", s, err, b.Moved)
	}

	// A case already small enough is returned as it is.
	small := mustCase(t, "s f32 32x32 src=perm(1,0)")
	if s, err := shrinkCase(small, 1<<20); err != nil || s != small {
		t.Errorf("small case: %v, %v", s, err)
	}

	// A case that cannot get small enough ends at its smallest form.
	big := mustCase(t, "b f32 64x64x64x64 src=perm(3,2,1,0)")
	s, err = shrinkCase(big, 1)
	if err != nil {
		t.Fatal(err)
	}
	if got := shapeString(s.Base); got != "8x8x8x8" {
		t.Errorf("smallest form of %v is %s", big, got)
	}
}

// TestNamedSuiteSizes checks named.txt: every case builds and plans, the
// small ones move at most 1 MiB and every other one at least 256 MiB; and
// every case still builds when shrunk to 64 KiB.
func TestNamedSuiteSizes(t *testing.T) {
	cs, err := parseSuiteFile("../../testdata/bench/named.txt")
	if err != nil {
		t.Fatal(err)
	}
	smalls := 0
	for _, c := range cs {
		b, err := buildCase(c)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		if _, err := layout.PlanCopy(b.Dst, b.Src, layout.PlanOptions{}); err != nil {
			t.Errorf("%s: plan: %v", c.Name, err)
		}
		switch {
		case b.Moved <= smallBytes:
			smalls++
		case b.Moved < 256<<20:
			t.Errorf("%s moves %s: large cases must move at least 256 MiB", c.Name, humanSize(b.Moved))
		}
		s, err := shrinkCase(c, 64<<10)
		if err != nil {
			t.Errorf("%s: shrink: %v", c.Name, err)
			continue
		}
		if _, err := buildCase(s); err != nil {
			t.Errorf("%s shrunk: %v", c.Name, err)
		}
	}
	if smalls < 2 {
		t.Errorf("named.txt has %d small cases, want at least 2 (4 KiB and 64 KiB)", smalls)
	}
}
