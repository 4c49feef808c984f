package jit

import (
	"slices"
	"sync"
	"testing"

	"github.com/stridekit/stridekit/internal/testenv"
	"github.com/stridekit/stridekit/runtime/cuda"
)

// TestHardenFuncKeyParamsAOT: Cache.Function's memory key and single-flight
// key tell apart calls that differ only in their parameter layout (nil,
// empty, another offset or size, one more parameter) or in the AOT image
// for the device's architecture, and agree for equal ones; building the
// key allocates nothing.
func TestHardenFuncKeyParamsAOT(t *testing.T) {
	const arch = 0 // a nil *cuda.Device reports architecture 0
	img1, img2 := []byte("cubin one"), []byte("cubin two")
	aotArch := "sm_" + "0"
	variants := []struct {
		name   string
		params []cuda.Param
		aot    map[string][]byte
	}{
		{"nil params", nil, nil},
		{"empty params", []cuda.Param{}, nil},
		{"copy2d", cuda.ParamsOf(8, 8, 4, 4, 8, 8), nil},
		{"copy2d, one more", cuda.ParamsOf(8, 8, 4, 4, 8, 8, 4), nil},
		{"other size", cuda.ParamsOf(8, 8, 4, 4, 8, 4), nil},
		{"other offset", []cuda.Param{{Offset: 0, Size: 8}, {Offset: 16, Size: 8}}, nil},
		{"offset and size swapped", []cuda.Param{{Offset: 8, Size: 0}, {Offset: 16, Size: 8}}, nil},
		{"aot for this arch", nil, map[string][]byte{aotArch: img1}},
		{"another aot for this arch", nil, map[string][]byte{aotArch: img2}},
		{"aot prefix", nil, map[string][]byte{aotArch: img1[:4]}},
		{"copy2d with aot", cuda.ParamsOf(8, 8, 4, 4, 8, 8), map[string][]byte{aotArch: img1}},
	}
	opts := Options{Arch: 80, Flags: []string{"-lineinfo"}}
	keys := map[funcKey]string{}
	flights := map[string]string{}
	for _, v := range variants {
		k := newFuncKey(nil, copyKernel, "copy2d", v.params, opts, v.aot)
		if other, dup := keys[k]; dup {
			t.Errorf("%s and %s share the memory key", v.name, other)
		}
		keys[k] = v.name
		if other, dup := flights[k.flightKey()]; dup {
			t.Errorf("%s and %s share the single-flight key", v.name, other)
		}
		flights[k.flightKey()] = v.name
		// Equal arguments in other slices give the same keys.
		k2 := newFuncKey(nil, copyKernel, "copy2d", slices.Clone(v.params), opts, v.aot)
		if k2 != k || k2.flightKey() != k.flightKey() {
			t.Errorf("%s: equal arguments give other keys", v.name)
		}
	}
	// An AOT map without this architecture's image loads what no map does.
	none := newFuncKey(nil, copyKernel, "copy2d", nil, opts, nil)
	if k := newFuncKey(nil, copyKernel, "copy2d", nil, opts, map[string][]byte{"sm_90": img1}); k != none {
		t.Errorf("an AOT map without sm_%d changed the key", arch)
	}

	params := cuda.ParamsOf(8, 8, 4, 4, 8, 8)
	aot := map[string][]byte{"sm_90": img2, aotArch: img1}
	if n := testing.AllocsPerRun(100, func() { _ = newFuncKey(nil, copyKernel, "copy2d", params, opts, aot) }); n != 0 {
		t.Errorf("newFuncKey allocates %v times", n)
	}
}

// TestHardenCacheFunctionParamsOnGPU loads one kernel through a Cache with
// two parameter layouts, concurrently: each caller gets a function with the
// layout it asked for (before, whoever came second could get the first's).
func TestHardenCacheFunctionParamsOnGPU(t *testing.T) {
	d := testenv.NeedGPU(t)
	testenv.NeedNVRTC(t)
	useCacheDir(t)
	c := NewCache()
	defer c.Close()
	layouts := [][]cuda.Param{cuda.ParamsOf(8, 8, 4, 4, 8, 8), cuda.ParamsOf(8, 8, 8, 8, 8, 8)}
	fns := make([]cuda.Function, 16)
	errs := make([]error, 16)
	var wg sync.WaitGroup
	for i := range fns {
		wg.Go(func() {
			fns[i], errs[i] = c.Function(d, copyKernel+"// params\n", "copy2d", layouts[i%2], Options{}, nil)
		})
	}
	wg.Wait()
	for i, fn := range fns {
		if errs[i] != nil {
			t.Fatalf("caller %d: %v", i, errs[i])
		}
		if got, want := fn.Params(), layouts[i%2]; !slices.Equal(got, want) {
			t.Errorf("caller %d asked for %v, got a function with %v", i, want, got)
		}
	}
	// Sequentially too: a memory hit keeps to its layout.
	for _, l := range layouts {
		fn, err := c.Function(d, copyKernel+"// params\n", "copy2d", l, Options{}, nil)
		if err != nil || !slices.Equal(fn.Params(), l) {
			t.Errorf("hit for %v: %v, %v", l, fn.Params(), err)
		}
	}
}
