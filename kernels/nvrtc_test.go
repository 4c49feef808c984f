package kernels

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stridekit/stridekit/gen"
	"github.com/stridekit/stridekit/internal/cudaemu"
	"github.com/stridekit/stridekit/internal/pairgen"
	"github.com/stridekit/stridekit/internal/testenv"
	"github.com/stridekit/stridekit/internal/tilegeom"
	"github.com/stridekit/stridekit/layout"
	"github.com/stridekit/stridekit/runtime/cuda"
)

// randomSigs returns n valid signatures of every class with a kernel, ranks
// up to 10, itemsizes 1–16 (odd ones included) and every valid Vec.
func randomSigs(r *rand.Rand, n int) []layout.Signature {
	classes := []layout.Class{layout.ClassElementwise, layout.ClassTile, layout.ClassBroadcast, layout.ClassFill, layout.ClassBoxTile}
	var out []layout.Signature
	for len(out) < n {
		s := layout.Signature{Class: classes[r.IntN(len(classes))], Itemsize: uint8(1 + r.IntN(16)), Index64: r.IntN(2) == 0}
		s.NDim = uint8(1 + r.IntN(10))
		if s.Class == layout.ClassTile {
			s.NDim = max(s.NDim, 2)
			s.Fast = uint8(r.IntN(int(s.NDim) - 1))
		}
		var vs []uint8
		for v := 1; v*int(s.Itemsize) <= 16; v *= 2 {
			vs = append(vs, uint8(v))
		}
		s.Vec = vs[r.IntN(len(vs))]
		if s.Class == layout.ClassBoxTile {
			s.Vec = 1
		}
		if gen.Check(s) == nil {
			out = append(out, s)
		}
	}
	return out
}

// compileBatches compiles sigs for arch in translation units of batch
// kernels each, returning the first failure or warning.
func compileBatches(sigs []layout.Signature, arch string, batch int) error {
	var archNum int
	fmt.Sscanf(arch, "sm_%d", &archNum)
	for i := 0; i < len(sigs); i += batch {
		var b strings.Builder
		var names []string
		for _, s := range sigs[i:min(i+batch, len(sigs))] {
			src, err := gen.Source(s, gen.KnobsFor(s, archNum))
			if err != nil {
				return err
			}
			b.WriteString(src)
			names = append(names, gen.Name(s))
		}
		img, log, err := cuda.NVRTCCompile(b.String(), fmt.Sprintf("batch%d.cu", i/batch), []string{"--gpu-architecture=" + arch}, true)
		if err != nil {
			var ne *cuda.NVRTCError
			if errors.As(err, &ne) {
				return fmt.Errorf("%s, kernels %s…: %.3000s", arch, names[0], ne.Log)
			}
			return fmt.Errorf("%s, kernels %s…: %w", arch, names[0], err)
		}
		if strings.TrimSpace(log) != "" {
			return fmt.Errorf("%s, kernels %s…: warnings:\n%.3000s", arch, names[0], log)
		}
		if len(img) == 0 {
			return fmt.Errorf("%s: empty image", arch)
		}
		for _, n := range names {
			if !strings.Contains(string(img), n) {
				return fmt.Errorf("%s: kernel %s missing from the CUBIN", arch, n)
			}
		}
	}
	return nil
}

// TestNVRTCCompileAll compiles every kernel of the default set and a random
// sample outside it for sm_80 and sm_90, failing on any error or warning.
// Kernels are batched into translation units to keep CI time low. With
// -short (the quick local run) it compiles every 10th kernel of the default
// set and 10 random ones instead of 40; CI runs it without -short.
func TestNVRTCCompileAll(t *testing.T) {
	testenv.NeedNVRTC(t)
	sigs := gen.DefaultSet()
	random := 40
	if testing.Short() {
		random = 10
		sigs = sigs[:0]
		for i, s := range gen.DefaultSet() {
			if i%10 == 0 {
				sigs = append(sigs, s)
			}
		}
	}
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	seen := map[layout.Signature]bool{}
	for _, s := range sigs {
		seen[s] = true
	}
	var sample []layout.Signature
	for _, s := range randomSigs(r, random) {
		if !seen[s] {
			seen[s] = true
			sample = append(sample, s)
		}
	}
	t.Logf("sample: %v", sample)
	sigs = append(sigs, sample...)
	start := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i, arch := range []string{"sm_80", "sm_90"} {
		half := len(sigs) / 2
		for j, part := range [][]layout.Signature{sigs[:half], sigs[half:]} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[2*i+j] = compileBatches(part, arch, 48)
			}()
		}
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	t.Logf("compiled %d kernels × 2 architectures in %v", len(sigs), time.Since(start).Round(time.Millisecond))
}

// TestArgsOffsetsChecked: a kernel source whose argument block disagrees
// with gen's packing by one field's offset does not compile — with NVRTC in
// C++03 (the dialect CI's NVRTC 11.8 defaults to, where NVRTC checks every
// field) and with the host compiler that runs the kernels in tests.
func TestArgsOffsetsChecked(t *testing.T) {
	sigs := []layout.Signature{
		{Class: layout.ClassBoxTile, NDim: 3, Itemsize: 4, Vec: 1},
		{Class: layout.ClassElementwise, NDim: 2, Itemsize: 8, Vec: 1},
	}
	for _, sig := range sigs {
		src, err := gen.Source(sig, gen.KnobsFor(sig, 90))
		if err != nil {
			t.Fatal(err)
		}
		bad := tamperOffset(t, src)
		if nvrtcOK() {
			opts := []string{"--gpu-architecture=sm_80", "--std=c++03"}
			if _, _, err := cuda.NVRTCCompile(src, "good.cu", opts, true); err != nil {
				t.Fatalf("%v: the untampered source does not compile: %v", sig, err)
			}
			if _, _, err := cuda.NVRTCCompile(bad, "bad.cu", opts, true); err == nil {
				t.Errorf("%v: NVRTC compiled a source whose argument offsets are wrong", sig)
			}
		}
		if cudaemu.Available() == nil {
			var l gen.Launch
			l.Grid, l.Block = gen.Dim3{X: 1, Y: 1, Z: 1}, gen.Dim3{X: 1, Y: 1, Z: 1}
			err := cudaemu.Launch(bad, gen.Name(sig), l, make([]byte, gen.ArgsSize(sig)), make([]byte, 64), 0, 0, make([]byte, 64), 0, 0)
			if err == nil || !strings.Contains(err.Error(), "compiling") {
				t.Errorf("%v: the host compiler took a source whose argument offsets are wrong: %v", sig, err)
			}
		}
	}
}

// tamperOffset moves the offset the source checks for its last field by 4.
func tamperOffset(t *testing.T, src string) string {
	re := regexp.MustCompile(`SK_AT_IS\(A, (\w+), (\d+)\)\); // gen packs`)
	m := re.FindAllStringSubmatchIndex(src, -1)
	if len(m) == 0 {
		t.Fatal("no field offset checks in the source")
	}
	last := m[len(m)-1]
	n, _ := strconv.Atoi(src[last[4]:last[5]])
	return src[:last[4]] + strconv.Itoa(n+4) + src[last[5]:]
}

// nvrtcOK reports whether NVRTC can be loaded (else the test checks the
// host compiler only; STRIDEKIT_REQUIRE_NVRTC makes NeedNVRTC fail).
func nvrtcOK() bool {
	_, _, err := cuda.NVRTCVersion()
	return err == nil
}

// TestNVRTCCompileSpecialised compiles kernels specialised to the plans of
// random pairs of every kind (gen.SpecialisedSource; box tiles at both
// load grains) for sm_80 and sm_90,
// in NVRTC's default dialect and in C++03, failing on any error or
// warning.
func TestNVRTCCompileSpecialised(t *testing.T) {
	testenv.NeedNVRTC(t)
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 8))
	n := 3
	if testing.Short() {
		n = 1
	}
	var b strings.Builder
	var names []string
	for _, kind := range pairgen.Kinds {
		for i := range n {
			c := pairgen.RandomKind(r, 1<<20, kind)
			grain := []int{tilegeom.ChunkGrain, 0}[i%2] // box tiles loaded in chunks (loadChunks) and in words
			p, err := layout.PlanCopy(c.Dst, c.Src, layout.PlanOptions{DstAlign: 16, SrcAlign: 4, LoadGrain: grain})
			if err != nil {
				t.Fatal(err)
			}
			if p.Sig.Class == layout.ClassNone || p.Sig.Class == layout.ClassMemcpy {
				continue
			}
			k := gen.KnobsFor(p.Sig, 90)
			args := make([]byte, gen.ArgsSize(p.Sig))
			if _, err := gen.Pack(p.Sig, k, &p, 132, args); err != nil {
				t.Fatal(err)
			}
			name, src, err := gen.SpecialisedSource(p.Sig, k, args)
			if err != nil {
				t.Fatal(err)
			}
			if slices.Contains(names, name) {
				continue // two pairs of one plan: one kernel, one namespace
			}
			b.WriteString(src)
			names = append(names, name)
		}
	}
	for _, opts := range [][]string{{"--gpu-architecture=sm_80"}, {"--gpu-architecture=sm_90"}, {"--gpu-architecture=sm_90", "--std=c++03"}} {
		img, log, err := cuda.NVRTCCompile(b.String(), "specialised.cu", opts, true)
		if err != nil {
			t.Fatalf("%v: %v", opts, err)
		}
		if strings.TrimSpace(log) != "" {
			t.Errorf("%v: warnings:\n%.3000s", opts, log)
		}
		for _, n := range names {
			if !strings.Contains(string(img), n) {
				t.Errorf("%v: kernel %s missing from the CUBIN", opts, n)
			}
		}
	}
	t.Logf("%d specialised kernels", len(names))
}
