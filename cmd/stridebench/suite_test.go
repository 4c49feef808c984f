package main

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/stridekit/stridekit/layout"
)

const O = layout.Omit

func TestParseCaseLineGood(t *testing.T) {
	f32, _ := layout.ParseDType("float32")
	x3, _ := layout.Opaque(3)
	c128, _ := layout.ParseDType("complex128")
	for _, tc := range []struct {
		line string
		want Case
	}{
		{"contig float32 16384x16384", Case{Name: "contig", DType: f32, Base: []int64{16384, 16384}}},
		{"t f32 4x8 src=perm(1,0)   # a comment", Case{Name: "t", DType: f32, Base: []int64{4, 8},
			Src: []viewOp{{Kind: opPerm, Args: []int64{1, 0}}}}},
		{"odd x3 5x7 src=perm(1, 0)", Case{Name: "odd", DType: x3, Base: []int64{5, 7},
			Src: []viewOp{{Kind: opPerm, Args: []int64{1, 0}}}}},
		{"o2 opaque3 5 ", Case{Name: "o2", DType: x3, Base: []int64{5}}},
		{"c c128 4x4 src=flip(-1)", Case{Name: "c", DType: c128, Base: []int64{4, 4},
			Src: []viewOp{{Kind: opFlip, Args: []int64{-1}}}}},
		{"st f32 4x8 src=slice(:, ::2).perm(1,0)", Case{Name: "st", DType: f32, Base: []int64{4, 8},
			Src: []viewOp{
				{Kind: opSlice, Items: []sliceItem{{Start: O, Stop: O, Step: 1}, {Start: O, Stop: O, Step: 2}}},
				{Kind: opPerm, Args: []int64{1, 0}},
			}}},
		{"sl f32 9x9 src=slice(1:-1:3, 2, ::-1)", Case{Name: "sl", DType: f32, Base: []int64{9, 9},
			Src: []viewOp{{Kind: opSlice, Items: []sliceItem{{Start: 1, Stop: -1, Step: 3}, {Index: true, Start: 2}, {Start: O, Stop: O, Step: -1}}}}}},
		{"b f32 1x8 src=bcast(4,8)", Case{Name: "b", DType: f32, Base: []int64{1, 8},
			Src: []viewOp{{Kind: opBcast, Args: []int64{4, 8}}}}},
		{"n f16 2x3x4x5 dst=perm(0,3,1,2)", Case{Name: "n", DType: mustDType(t, "float16"), Base: []int64{2, 3, 4, 5},
			Dst: []viewOp{{Kind: opPerm, Args: []int64{0, 3, 1, 2}}}}},
		{"d u8 4x4 dst=slice(1:5) dstbase=6x4", Case{Name: "d", DType: mustDType(t, "uint8"), Base: []int64{4, 4},
			Dst:     []viewOp{{Kind: opSlice, Items: []sliceItem{{Start: 1, Stop: 5, Step: 1}}}},
			DstBase: []int64{6, 4}}},
		{"\tk-1.2+x\tu8\t3x3\tsrc=\t", Case{Name: "k-1.2+x", DType: mustDType(t, "uint8"), Base: []int64{3, 3}}},
	} {
		got, err := parseCaseLine(tc.line, "suite.txt", 7)
		if err != nil {
			t.Errorf("%q: %v", tc.line, err)
			continue
		}
		tc.want.File, tc.want.Line = "suite.txt", 7
		if !reflect.DeepEqual(*got, tc.want) {
			t.Errorf("%q:\n got %+v\nwant %+v", tc.line, *got, tc.want)
		}
		// The written form parses back to the same case.
		again, err := parseCaseLine(got.String(), "suite.txt", 7)
		if err != nil {
			t.Errorf("%q: String() = %q does not parse: %v", tc.line, got.String(), err)
		} else if !reflect.DeepEqual(again, got) {
			t.Errorf("%q: String() = %q parses to %+v", tc.line, got.String(), *again)
		}
	}
}

func mustDType(t *testing.T, s string) layout.DType {
	t.Helper()
	d, err := layout.ParseDType(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestParseCaseLineSkips(t *testing.T) {
	for _, line := range []string{"", "   ", "# just a comment", "\t# indented comment"} {
		c, err := parseCaseLine(line, "f", 1)
		if c != nil || err != nil {
			t.Errorf("%q: got %v, %v; want nil, nil", line, c, err)
		}
	}
}

func TestParseCaseLineBad(t *testing.T) {
	for _, tc := range []struct {
		line, token, msg string
	}{
		{"onlyname f32", "onlyname f32", "NAME DTYPE SHAPE"},
		{"bad/name f32 4", "bad/name", "case name"},
		{"t floaty 4", "floaty", "unknown dtype"},
		{"t float4_e2m1fn 4", "float4_e2m1fn", "sub-byte"},
		{"t x0 4", "x0", "opaque size"},
		{"t f32 4xq", "4xq", `extent "q"`},
		{"t f32 4x0", "4x0", `extent "0"`},
		{"t f32 4x4 perm(1,0)", "perm(1,0)", "src=EXPR"},
		{"t f32 4x4 src=perm(1,0", "src=perm(1,0", "unbalanced '('"},
		{"t f32 4x4 src=perm(1,0))", "src=perm(1,0))", "unbalanced ')'"},
		{"t f32 4x4 src=twist(1,0)", "twist(1,0)", "unknown operation"},
		{"t f32 4x4 src=perm", "perm", "NAME(ARGS)"},
		{"t f32 4x4 src=perm()", "perm()", "at least one argument"},
		{"t f32 4x4 src=perm(1,a)", "a", "integers"},
		{"t f32 4x4 src=bcast(0,4)", "0", "positive"},
		{"t f32 4x4 src=slice(::0)", "::0", "step must not be 0"},
		{"t f32 4x4 src=slice(1:2:3:4)", "1:2:3:4", "at most two"},
		{"t f32 4x4 src=slice(a:)", "a:", "not an integer"},
		{"t f32 4x4 src=slice(,)", "", "empty slice entry"},
		{"t f32 4x4 src=perm(1,0) src=perm(1,0)", "src=perm(1,0)", "given twice"},
		{"t f32 4x4 color=red", "color=red", "unknown key"},
		{"t f32 4x4 dstbase=4x", "4x", "extent"},
	} {
		_, err := parseCaseLine(tc.line, "suite.txt", 12)
		if err == nil {
			t.Errorf("%q: no error", tc.line)
			continue
		}
		if !errors.Is(err, errSyntax) {
			t.Errorf("%q: %v is not errSyntax", tc.line, err)
		}
		var se *syntaxError
		if !errors.As(err, &se) {
			t.Fatalf("%q: %T is not a *syntaxError", tc.line, err)
		}
		if se.File != "suite.txt" || se.Line != 12 || se.Token != tc.token {
			t.Errorf("%q: error at %s:%d token %q, want suite.txt:12 token %q", tc.line, se.File, se.Line, se.Token, tc.token)
		}
		if !strings.Contains(err.Error(), tc.msg) || !strings.Contains(err.Error(), "suite.txt:12") {
			t.Errorf("%q: error %q does not say %q at suite.txt:12", tc.line, err, tc.msg)
		}
	}
}

func TestParseSuite(t *testing.T) {
	text := "# header\n\na f32 4x4\nb u8 8 src=flip(0)  # trailing\n"
	cs, err := parseSuite(strings.NewReader(text), "s.txt")
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 2 || cs[0].Name != "a" || cs[0].Line != 3 || cs[1].Name != "b" || cs[1].Line != 4 {
		t.Fatalf("got %v", cs)
	}
	_, err = parseSuite(strings.NewReader("a f32 4\nb f32 4\na u8 2\n"), "s.txt")
	var se *syntaxError
	if !errors.As(err, &se) || se.Line != 3 || !strings.Contains(se.Msg, "line 1") {
		t.Fatalf("duplicate name: got %v", err)
	}
	_, err = parseSuite(strings.NewReader("a f32 4\nb f32 4x\n"), "s.txt")
	if !errors.As(err, &se) || se.Line != 2 {
		t.Fatalf("bad second line: got %v", err)
	}
}

// TestNamedSuiteParses checks the built-in suite (named.txt, the default of
// -suite; TestDefaultSuiteCopy keeps testdata/bench/named.txt the same).
func TestNamedSuiteParses(t *testing.T) {
	cs, err := parseSuite(bytes.NewReader(defaultSuiteText), defaultSuiteName)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, c := range cs {
		names[c.Name] = true
	}
	for _, want := range []string{"contig_f32", "transpose_f32", "transpose_f16", "transpose_u8", "transpose_f64", "transpose_c128",
		"perm0213_f32", "perm3210_f32", "nchw_nhwc_f16", "nhwc_nchw_f16", "slice_step2_f32", "slice_step3_f32",
		"flip_last_f32", "bcast_row_f32", "slice_t_f32", "batched_t30_f32", "transpose_x3", "rgb_t_u8",
		"small_t_4k_f32", "small_t_64k_f32"} {
		if !names[want] {
			t.Errorf("named.txt has no case %s", want)
		}
	}
}

// TestDTypeSpellings checks that a suite's DTYPE is read by
// layout.ParseDType, the parser stridekit's -dtype uses: the same
// spellings, xN included, give the same dtypes; sub-byte types are refused.
func TestDTypeSpellings(t *testing.T) {
	for _, name := range []string{"x3", "X12", "opaque3", "float32x4", "f16", "bf16", "c128", "e4m3", "u8"} {
		want, err := layout.ParseDType(name)
		if err != nil {
			t.Fatalf("layout.ParseDType(%q): %v", name, err)
		}
		if got, err := parseDType(name); err != nil || got != want {
			t.Errorf("parseDType(%q) = %v, %v; want %v", name, got, err, want)
		}
	}
	for _, name := range []string{"fp4", "float6_e3m2fn", "x0", "x70000", "x+3", "nope"} {
		if d, err := parseDType(name); err == nil || strings.Contains(err.Error(), "<nil>") {
			t.Errorf("parseDType(%q) = %v, %v; want an error", name, d, err)
		}
	}
}
