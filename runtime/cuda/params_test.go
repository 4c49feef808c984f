package cuda

import (
	"encoding/binary"
	"errors"
	"slices"
	"strings"
	"testing"
	"unsafe"
)

func TestParamsOf(t *testing.T) {
	for _, c := range []struct {
		sizes []int
		want  []Param
	}{
		{nil, []Param{}},
		{[]int{8, 8, 24}, []Param{{0, 8}, {8, 8}, {16, 24}}},
		{[]int{4, 8}, []Param{{0, 4}, {8, 8}}},
		{[]int{1, 2, 1, 4, 1, 8}, []Param{{0, 1}, {2, 2}, {4, 1}, {8, 4}, {12, 1}, {16, 8}}},
		{[]int{1, 3, 1, 12}, []Param{{0, 1}, {4, 3}, {7, 1}, {8, 12}}}, // 3 → align 4, 12 → align 8
		{[]int{2, 1024, 4}, []Param{{0, 2}, {8, 1024}, {1032, 4}}},     // big struct: align 8
		{[]int{0, -5, 40000}, []Param{{0, 0}, {0, 0}, {0, 0}}},         // invalid sizes: Size 0
		{[]int{32764}, []Param{{0, 32764}}},                            // the whole buffer
		{[]int{1, 32764}, []Param{{0, 1}, {8, 32764}}},                 // ends past the limit
		{[]int{16, 1, 16}, []Param{{0, 16}, {16, 1}, {24, 16}}},        // 16 → align 8
		{[]int{5, 6, 7}, []Param{{0, 5}, {8, 6}, {16, 7}}},             // 5..7 → align 8
		{[]int{4, 4, 4, 8, 4}, []Param{{0, 4}, {4, 4}, {8, 4}, {16, 8}, {24, 4}}},
	} {
		if got := ParamsOf(c.sizes...); !slices.Equal(got, c.want) {
			t.Errorf("ParamsOf(%v) = %v, want %v", c.sizes, got, c.want)
		}
	}
}

// TestParamsOfNoWrap lays out more parameters than 32-bit offsets can
// address: offsets saturate instead of wrapping to small numbers, and the
// layout stays ascending.
func TestParamsOfNoWrap(t *testing.T) {
	sizes := make([]int, 140000)
	for i := range sizes {
		sizes[i] = maxParamBytes
	}
	p := ParamsOf(sizes...)
	for i := 1; i < len(p); i++ {
		if p[i].Offset < p[i-1].Offset {
			t.Fatalf("offset %d = %d wraps below offset %d = %d", i, p[i].Offset, i-1, p[i-1].Offset)
		}
	}
	if err := checkParams("k", p); !errors.Is(err, ErrInvalidValue) {
		t.Errorf("checkParams of a 4 GiB layout: %v", err)
	}
}

func TestCheckParams(t *testing.T) {
	for _, c := range []struct {
		params []Param
		bad    string // "" for a valid layout, else a substring of the error
	}{
		{nil, ""},
		{ParamsOf(8, 8, 4), ""},
		{[]Param{{0, 4}, {100, 4}}, ""}, // gaps are fine
		{[]Param{{32760, 4}}, ""},
		{[]Param{{0, 8}, {4, 8}}, "params[1] = {Offset:4 Size:8} starts before params[0]"},
		{[]Param{{8, 8}, {0, 8}}, "params[1] = {Offset:0 Size:8} starts before"},
		{[]Param{{0, 8}, {8, 0}}, "params[1] = {Offset:8 Size:0}: size 0"},
		{[]Param{{32760, 8}}, "ends at byte 32768, past CUDA's 32764-byte limit"},
		{[]Param{{0xffffffff, 0xffffffff}}, "ends at byte 8589934590"},
		{ParamsOf(1, 0), "size 0"},
	} {
		err := checkParams("kern", c.params)
		if c.bad == "" {
			if err != nil {
				t.Errorf("%v: %v", c.params, err)
			}
			continue
		}
		if !errors.Is(err, ErrInvalidValue) || !strings.Contains(err.Error(), c.bad) || !strings.Contains(err.Error(), `"kern"`) {
			t.Errorf("%v: error %v, want ErrInvalidValue naming the kernel and %q", c.params, err, c.bad)
		}
	}
}

// loadFake loads a module of the fake driver.
func loadFake(t *testing.T, d *Device) *Module {
	t.Helper()
	m, err := d.LoadModule([]byte("\x7fELF fake image"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestFunctionWithParamsQueriesNothing: with the layout given, the driver
// is asked for no parameter information at all, and Launch lays the values
// out as given.
func TestFunctionWithParamsQueriesNothing(t *testing.T) {
	layout := ParamsOf(8, 4, 24)
	f, d := installFakeDriver(t, map[string][]Param{"k": layout})
	m := loadFake(t, d)
	fn, err := m.FunctionWithParams("k", layout)
	if err != nil {
		t.Fatal(err)
	}
	if n := f.paramCountCalls.Load() + f.paramInfoCalls.Load(); n != 0 {
		t.Errorf("FunctionWithParams made %d parameter queries, want 0", n)
	}
	if fn.NumParams() != 3 || !slices.Equal(fn.Params(), layout) || fn.Name() != "k" {
		t.Errorf("function: %d params %v name %q", fn.NumParams(), fn.Params(), fn.Name())
	}
	ptr, n := uint64(0x1122334455667788), int32(-7)
	var args [24]byte
	for i := range args {
		args[i] = byte(i + 1)
	}
	if err := Launch(fn, Dim3{1, 1, 1}, Dim3{1, 1, 1}, 0, nil, unsafe.Pointer(&ptr), unsafe.Pointer(&n), unsafe.Pointer(&args)); err != nil {
		t.Fatal(err)
	}
	got := f.launched
	if len(got) != 3 || binary.LittleEndian.Uint64(got[0]) != ptr || int32(binary.LittleEndian.Uint32(got[1])) != n || string(got[2]) != string(args[:]) {
		t.Errorf("launched values %x", got)
	}
	// The caller's slice is copied: changing it later changes nothing.
	layout[0].Size = 99
	if fn.Params()[0].Size != 8 {
		t.Error("Function shares the caller's params slice")
	}
	// Invalid layouts are refused before any driver call.
	for _, bad := range [][]Param{{{0, 8}, {4, 4}}, {{0, 0}}, {{32764, 1}}} {
		if _, err := m.FunctionWithParams("k", bad); !errors.Is(err, ErrInvalidValue) || !strings.Contains(err.Error(), `"k"`) {
			t.Errorf("FunctionWithParams(%v): %v", bad, err)
		}
	}
	// Launch after the module's Close.
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := Launch(fn, Dim3{1, 1, 1}, Dim3{1, 1, 1}, 0, nil, unsafe.Pointer(&ptr), unsafe.Pointer(&n), unsafe.Pointer(&args)); !errors.Is(err, ErrClosed) {
		t.Errorf("Launch after the module's Close: %v", err)
	}
	if _, err := m.FunctionWithParams("k", ParamsOf(8)); !errors.Is(err, ErrClosed) {
		t.Errorf("FunctionWithParams after Close: %v", err)
	}
	f.check(t)
}

// TestLaunchLargeParams covers the slow path: a parameter buffer beyond the
// pooled block.
func TestLaunchLargeParams(t *testing.T) {
	layout := ParamsOf(8, 8000)
	f, d := installFakeDriver(t, map[string][]Param{"big": layout})
	fn, err := loadFake(t, d).FunctionWithParams("big", layout)
	if err != nil {
		t.Fatal(err)
	}
	p := uint64(42)
	big := make([]byte, 8000)
	for i := range big {
		big[i] = byte(i * 7)
	}
	if err := Launch(fn, Dim3{1, 1, 1}, Dim3{1, 1, 1}, 0, nil, unsafe.Pointer(&p), unsafe.Pointer(&big[0])); err != nil {
		t.Fatal(err)
	}
	if got := f.launched; len(got) != 2 || binary.LittleEndian.Uint64(got[0]) != 42 || string(got[1]) != string(big) {
		t.Error("large launch passed wrong values")
	}
}

// TestFunctionReadsExactlyTheParameters: with cuFuncGetParamCount, Function
// asks for each parameter once and never past the last.
func TestFunctionReadsExactlyTheParameters(t *testing.T) {
	layout := ParamsOf(8, 8, 4, 2)
	f, d := installFakeDriver(t, map[string][]Param{"k": layout, "none": nil})
	m := loadFake(t, d)
	fn, err := m.Function("k")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(fn.Params(), layout) {
		t.Errorf("read %v, want %v", fn.Params(), layout)
	}
	if c, i, past := f.paramCountCalls.Load(), f.paramInfoCalls.Load(), f.paramInfoPastEnd.Load(); c != 1 || i != 4 || past != 0 {
		t.Errorf("%d count queries, %d info queries, %d past the end; want 1, 4, 0", c, i, past)
	}
	fn, err = m.Function("none")
	if err != nil || fn.NumParams() != 0 || f.paramInfoPastEnd.Load() != 0 {
		t.Errorf("kernel without parameters: %d params, %v, %d queries past the end", fn.NumParams(), err, f.paramInfoPastEnd.Load())
	}
	if _, err := m.Function("missing"); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), `"missing"`) {
		t.Errorf("missing kernel: %v", err)
	}
}

// TestFunctionProbesWithoutParamCount: a driver without cuFuncGetParamCount
// is probed up to the first CUDA_ERROR_INVALID_VALUE, once past the last.
func TestFunctionProbesWithoutParamCount(t *testing.T) {
	layout := ParamsOf(8, 4)
	f, d := installFakeDriver(t, map[string][]Param{"k": layout})
	drv.cuFuncGetParamCount = 0
	fn, err := loadFake(t, d).Function("k")
	if err != nil || !slices.Equal(fn.Params(), layout) {
		t.Fatalf("probed %v, %v; want %v", fn.Params(), err, layout)
	}
	if i, past := f.paramInfoCalls.Load(), f.paramInfoPastEnd.Load(); i != 3 || past != 1 {
		t.Errorf("%d info queries, %d past the end; want 3, 1", i, past)
	}
}

// TestFunctionReturnsDriverErrors: an error while reading the parameters is
// Function's error, naming the kernel, not an empty layout.
func TestFunctionReturnsDriverErrors(t *testing.T) {
	layout := ParamsOf(8, 4, 4)
	for _, c := range []struct {
		name         string
		countErr     uintptr
		infoErr      uintptr
		infoErrAt    int
		noParamCount bool
		want         error
	}{
		{"count fails", 201, 0, -1, false, ErrInvalidContext},
		{"info fails", 0, 2, 1, false, ErrOutOfMemory},
		{"info says invalid value though the count says 3", 0, 1, 2, false, ErrInvalidValue},
		{"probe fails otherwise than past the end", 0, 201, 1, true, ErrInvalidContext},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, d := installFakeDriver(t, map[string][]Param{"kern": layout})
			f.paramCountErr, f.paramInfoErr, f.paramInfoErrAt = c.countErr, c.infoErr, c.infoErrAt
			if c.noParamCount {
				drv.cuFuncGetParamCount = 0
			}
			fn, err := loadFake(t, d).Function("kern")
			var ce *Error
			if !errors.Is(err, c.want) || !errors.As(err, &ce) || !strings.Contains(err.Error(), `"kern"`) {
				t.Fatalf("Function = %d params, %v; want an *Error matching %v naming the kernel", fn.NumParams(), err, c.want)
			}
			if fn.info != nil {
				t.Error("Function returned a Function with its error")
			}
		})
	}
}

// TestFunctionWithoutParamInfo: a driver older than CUDA 12.4 cannot tell
// the layout; Function still loads, its Launch says why it cannot run, and
// FunctionWithParams works.
func TestFunctionWithoutParamInfo(t *testing.T) {
	layout := ParamsOf(8)
	f, d := installFakeDriver(t, map[string][]Param{"k": layout})
	drv.cuFuncGetParamInfo, drv.cuFuncGetParamCount = 0, 0
	m := loadFake(t, d)
	fn, err := m.Function("k")
	if err != nil {
		t.Fatal(err)
	}
	p := uint64(1)
	if err := Launch(fn, Dim3{1, 1, 1}, Dim3{1, 1, 1}, 0, nil, unsafe.Pointer(&p)); !errors.Is(err, ErrNotSupported) || fn.NumParams() != -1 {
		t.Errorf("Launch without a layout: %v (NumParams %d)", err, fn.NumParams())
	}
	fn, err = m.FunctionWithParams("k", layout)
	if err != nil {
		t.Fatal(err)
	}
	if err := Launch(fn, Dim3{1, 1, 1}, Dim3{1, 1, 1}, 0, nil, unsafe.Pointer(&p)); err != nil || f.launches.Load() != 1 {
		t.Errorf("Launch with a given layout: %v", err)
	}
}

// TestLaunchArgumentErrors: wrong arity, nil argument pointers and negative
// shared memory are refused before the driver sees them.
func TestLaunchArgumentErrors(t *testing.T) {
	layout := ParamsOf(8, 4)
	f, d := installFakeDriver(t, map[string][]Param{"k": layout})
	fn, err := loadFake(t, d).FunctionWithParams("k", layout)
	if err != nil {
		t.Fatal(err)
	}
	p, n := uint64(1), int32(2)
	for name, err := range map[string]error{
		"1 arg for 2":     Launch(fn, Dim3{1, 1, 1}, Dim3{1, 1, 1}, 0, nil, unsafe.Pointer(&p)),
		"nil arg":         Launch(fn, Dim3{1, 1, 1}, Dim3{1, 1, 1}, 0, nil, unsafe.Pointer(&p), nil),
		"negative shared": Launch(fn, Dim3{1, 1, 1}, Dim3{1, 1, 1}, -1, nil, unsafe.Pointer(&p), unsafe.Pointer(&n)),
		"zero stream":     Launch(fn, Dim3{1, 1, 1}, Dim3{1, 1, 1}, 0, &Stream{}, unsafe.Pointer(&p), unsafe.Pointer(&n)),
	} {
		if !errors.Is(err, ErrInvalidValue) {
			t.Errorf("%s: %v, want ErrInvalidValue", name, err)
		}
	}
	if f.launches.Load() != 0 {
		t.Errorf("%d launches reached the driver", f.launches.Load())
	}
	if err := fn.SetMaxDynamicSharedMemory(-1); !errors.Is(err, ErrInvalidValue) {
		t.Errorf("SetMaxDynamicSharedMemory(-1): %v", err)
	}
	if err := fn.SetMaxDynamicSharedMemory(64 << 10); err != nil {
		t.Errorf("SetMaxDynamicSharedMemory: %v", err)
	}
}
