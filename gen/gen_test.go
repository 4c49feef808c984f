package gen

import (
	"bytes"
	"encoding/binary"
	"errors"
	"flag"
	"math/big"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/stridekit/stridekit/layout"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// goldenSigs are the signatures whose CUDA source and Go file are pinned.
var goldenSigs = []string{
	"elem:nd=3,item=4,vec=1,idx=32",
	"tile:nd=3,fast=0,item=4,vec=4,idx=32",
	"tile:nd=2,fast=0,item=1,vec=16,idx=64",
	"bcast:nd=2,item=4,vec=4,idx=32",
	"fill:nd=2,item=12,vec=1,idx=64",
	"btile:nd=3,item=4,vec=1,idx=32",
	"btile:nd=2,item=3,vec=1,idx=64",
}

func mustSig(t testing.TB, s string) layout.Signature {
	t.Helper()
	sig, err := layout.ParseSignature(s)
	if err != nil {
		t.Fatal(err)
	}
	return sig
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./gen -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (run go test ./gen -update if the change is intended)", path)
	}
}

func TestGolden(t *testing.T) {
	for _, s := range goldenSigs {
		sig := mustSig(t, s)
		src, err := Source(sig, KnobsFor(sig, 0))
		if err != nil {
			t.Fatal(err)
		}
		golden(t, Name(sig)+".cu", []byte(src))
	}
}

// TestDeterministic renders every default signature twice and wants
// identical bytes, with a kernel of the right name.
func TestDeterministic(t *testing.T) {
	for _, sig := range DefaultSet() {
		k := KnobsFor(sig, 90)
		a, err := Source(sig, k)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := Source(sig, k)
		if a != b {
			t.Fatalf("%v: two renderings differ", sig)
		}
		if !strings.Contains(a, `extern "C" __global__ void __launch_bounds__(`) || !strings.Contains(a, Name(sig)+"(") {
			t.Fatalf("%v: no kernel %s in the source", sig, Name(sig))
		}
	}
}

func TestNames(t *testing.T) {
	for s, want := range map[string]string{
		"tile:nd=3,fast=0,item=4,vec=4,idx=32": "sk_tile_nd3_f0_i4_v4_i32",
		"elem:nd=6,item=16,vec=1,idx=64":       "sk_elem_nd6_i16_v1_i64",
		"fill:nd=1,item=1,vec=16,idx=32":       "sk_fill_nd1_i1_v16_i32",
	} {
		if got := Name(mustSig(t, s)); got != want {
			t.Errorf("Name(%s) = %s, want %s", s, got, want)
		}
	}
}

func TestCheckRejects(t *testing.T) {
	for _, sig := range []layout.Signature{
		{Class: layout.ClassMemcpy, NDim: 1, Itemsize: 4, Vec: 1},
		{Class: layout.ClassElementwise, NDim: MaxNDim + 1, Itemsize: 4, Vec: 1},
		{Class: layout.ClassTile, NDim: 2, Fast: 1, Itemsize: 4, Vec: 1},
		{Class: layout.ClassBoxTile, NDim: layout.MaxBoxNDim + 1, Itemsize: 4, Vec: 1},
		{Class: layout.ClassBoxTile, NDim: 2, Itemsize: 4, Vec: 2},
	} {
		if err := Check(sig); err == nil {
			t.Errorf("Check(%+v) = nil", sig)
		}
	}
}

func checkMagic(t *testing.T, d, n uint64, is64 bool) {
	var mul uint64
	var shr uint32
	var q uint64
	if is64 {
		mul, shr = Magic64(d)
		if d == 1 {
			q = n
		} else {
			hi := new(big.Int).Mul(new(big.Int).SetUint64(n), new(big.Int).SetUint64(mul))
			q = hi.Rsh(hi, 64+uint(shr)).Uint64()
		}
	} else {
		mul, shr = Magic32(d)
		if d == 1 {
			q = n
		} else {
			if mul>>32 != 0 {
				t.Fatalf("Magic32(%d) multiplier %#x over 32 bits", d, mul)
			}
			q = (n * mul) >> 32 >> shr
		}
	}
	if q != n/d {
		t.Fatalf("magic (64=%v) %d/%d = %d, want %d (mul %#x shr %d)", is64, n, d, q, n/d, mul, shr)
	}
}

func TestMagic(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	ds := []uint64{1, 2, 3, 5, 7, 64, 100, 255, 256, 1000, 65535, 65536, 1<<20 + 1, 1<<31 - 1, 1 << 31}
	for i := 0; i < 200; i++ {
		ds = append(ds, r.Uint64N(1<<31)+1)
	}
	for _, d := range ds {
		for _, n := range []uint64{0, 1, d - 1, d, d + 1, 2*d - 1, 1<<31 - 1, 1<<31 - 2, r.Uint64N(1 << 31)} {
			if n < 1<<31 {
				checkMagic(t, d, n, false)
			}
		}
	}
	for i := 0; i < 200; i++ {
		ds = append(ds, r.Uint64N(1<<62)+1, 1<<uint(r.IntN(63)))
	}
	for _, d := range ds {
		for _, n := range []uint64{0, 1, d - 1, d, d + 1, 1<<63 - 1, r.Uint64N(1 << 63)} {
			if n < 1<<63 {
				checkMagic(t, d, n, true)
			}
		}
	}
}

func TestPackLayout(t *testing.T) {
	sig := mustSig(t, "tile:nd=3,fast=1,item=4,vec=4,idx=32")
	p := &layout.Plan{Sig: sig, Shape: []int64{5, 256, 128}, DstStrides: []int64{256 * 128, 128, 1},
		SrcStrides: []int64{256 * 128, 1, 256}, Volume: 5 * 256 * 128}
	buf := make([]byte, ArgsSize(sig))
	l, err := Pack(sig, KnobsFor(sig, 0), p, 132, buf)
	if err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	if n := le.Uint64(buf); n != 5*4*2 || l.Grid.X != 40 || l.Block.X != 256 {
		t.Fatalf("ntiles %d launch %+v", n, l)
	}
	if got := int64(le.Uint64(buf[32+8*1:])); got != 256 {
		t.Fatalf("shape[1] = %d", got)
	}
	if _, err := Pack(mustSig(t, "tile:nd=3,fast=0,item=4,vec=4,idx=32"), KnobsFor(sig, 0), p, 132, buf); err == nil {
		t.Fatal("Pack accepted a plan of another signature")
	}
}

// TestPackAllocs: packing an argument block allocates nothing (it is on
// the path of every launch).
func TestPackAllocs(t *testing.T) {
	dst, _ := layout.Dense([]int64{301, 299, 7}, 4, layout.C)
	src, _ := layout.Dense([]int64{301, 299, 7}, 4, layout.Perm(2, 1, 0))
	for _, pr := range [][2]layout.Layout{{dst, src}} {
		p, err := layout.PlanCopy(pr[0], pr[1], layout.PlanOptions{DstAlign: 16, SrcAlign: 16})
		if err != nil {
			t.Fatal(err)
		}
		k := KnobsFor(p.Sig, 90)
		buf := make([]byte, 4096)
		if a := testing.AllocsPerRun(100, func() {
			if _, err := Pack(p.Sig, k, &p, 132, buf); err != nil {
				t.Fatal(err)
			}
		}); a != 0 {
			t.Errorf("Pack(%v) allocates %v times", p.Sig, a)
		}
	}
}

// TestKnobsTable parses the embedded table and checks its lookups: the
// heuristic for unknown GPUs, specific entries over general ones, and
// Override.
func TestKnobsTable(t *testing.T) {
	if _, err := ParseTuning("tuning.txt", strings.NewReader(TuningTable())); err != nil {
		t.Fatal(err)
	}
	tile16 := mustSig(t, "tile:nd=2,fast=0,item=1,vec=16,idx=32")
	tile8 := mustSig(t, "tile:nd=2,fast=0,item=2,vec=8,idx=32")
	if k := KnobsFor(tile16, 0); k.Threads != 256 || !k.WordCols {
		t.Errorf("tile vec=16: %+v", k)
	}
	if k := KnobsFor(tile8, 75); k.Threads != 128 || !k.WordCols {
		t.Errorf("tile vec=8: %+v", k)
	}
	for _, sig := range DefaultSet() {
		if err := CheckKnobs(sig, KnobsFor(sig, 90)); err != nil {
			t.Error(err)
		}
	}
	k := KnobsFor(tile16, 90)
	k.Threads = 128
	if err := Override(tile16, 90, k); err != nil {
		t.Fatal(err)
	}
	if got := KnobsFor(tile16, 90); got.Threads != 128 {
		t.Errorf("override ignored: %+v", got)
	}
	ClearOverrides()
	if got := KnobsFor(tile16, 90); got.Threads != 256 {
		t.Errorf("override not cleared: %+v", got)
	}
	k.Threads = 100
	if err := Override(tile16, 90, k); err == nil {
		t.Error("Override accepted 100 threads")
	}
	for _, bad := range []string{"sm_90 tile", "sm_x tile * * threads=1", "any memcpy * * threads=32", "any tile 0 * threads=32",
		"any tile * * threads", "any tile * * speed=3"} {
		if _, err := ParseTuning("bad.txt", strings.NewReader(bad)); !errors.Is(err, ErrTuning) {
			t.Errorf("ParseTuning(%q): %v", bad, err)
		}
	}
}

// TestKnobsLookup checks LookupKnobs' defaults, specificity order and the
// names Get and Set share with the table.
func TestKnobsLookup(t *testing.T) {
	sig := mustSig(t, "tile:nd=2,fast=0,item=2,vec=8,idx=32")
	want := Knobs{Threads: 256, Rows: 1, Unroll: 1, BlockBytes: 1, TileBytes: layout.DefaultTileBytes, LoadLanes: 1, StoreLanes: 1}
	if k := LookupKnobs(nil, sig, 90); k != want {
		t.Errorf("no entries: %+v, want %+v", k, want)
	}
	es, err := ParseTuning("t.txt", strings.NewReader(
		"sm_90 tile 2 8 threads=64\nsm_90 tile * * threads=512 rows=3\nany tile 2 * threads=128 wordcols=1\nany tile * * threads=32 unroll=2\nany elem * * threads=1024\n"))
	if err != nil {
		t.Fatal(err)
	}
	want.Threads, want.Rows, want.WordCols, want.Unroll = 64, 3, true, 2
	if k := LookupKnobs(es, sig, 90); k != want {
		t.Errorf("sm_90: %+v, want %+v", k, want)
	}
	want.Threads, want.Rows = 128, 1
	if k := LookupKnobs(es, sig, 80); k != want {
		t.Errorf("sm_80: %+v, want %+v", k, want)
	}
	var k Knobs
	for i, name := range KnobNames() {
		if !k.Set(name, i+2) {
			t.Errorf("Set(%q) = false", name)
		}
		flag := name == "wordcols" || name == "stagestores" || name == "elemstore" || name == "overlaptables" || name == "calcoffsets" || name == "siblings" || name == "specialise"
		if v, ok := k.Get(name); !ok || (!flag && v != i+2) || (flag && v != 1) {
			t.Errorf("Get(%q) = %d, %v after Set %d", name, v, ok, i+2)
		}
	}
	// Every field has a name: after setting each name, no field is zero.
	kv := reflect.ValueOf(k)
	for i := 0; i < kv.NumField(); i++ {
		if kv.Field(i).IsZero() {
			t.Errorf("Knobs.%s has no name in the tuning table", kv.Type().Field(i).Name)
		}
	}
	before := k
	if k.Set("speed", 3) || k != before {
		t.Errorf("Set of an unknown name changed %+v to %+v", before, k)
	}
	if _, ok := k.Get("speed"); ok {
		t.Error("Get of an unknown name reported true")
	}
}

// TestRowsBlockX checks the rows kernels' blockDim.x: a row that fits one
// block gets exactly its threads, a longer one the fewest blocks of whole
// warps.
func TestRowsBlockX(t *testing.T) {
	for _, c := range []struct {
		inner      int64
		x, threads int
		want       int64
	}{
		{37, 1, 256, 37},
		{64, 1, 256, 64},
		{256, 1, 256, 256},
		{300, 1, 256, 160},
		{903, 1, 256, 256},
		{600, 1, 96, 96},
		{1000, 4, 256, 250},
		{4000, 1, 1024, 1024},
		{2100, 1, 1024, 704},
		{1 << 20, 1, 256, 256},
		{1, 1, 256, 1},
	} {
		if got := rowsBlockX(c.inner, c.x, c.threads); got != c.want {
			t.Errorf("rowsBlockX(%d, %d, %d) = %d, want %d", c.inner, c.x, c.threads, got, c.want)
		}
	}
}

// TestDefaultSetHoldsFoldedRuns: the planner folds common runs of 3
// bytes into 3-byte items where the vector tile then takes the copy
// (vectors of four), relying on the default set to hold that tile at
// every rank, src fast dim and index width, so a fold never waits on a
// compile the default set would have spared.
func TestDefaultSetHoldsFoldedRuns(t *testing.T) {
	have := map[layout.Signature]bool{}
	for _, s := range DefaultSet() {
		have[s] = true
	}
	for nd := uint8(2); nd <= DefaultMaxNDim; nd++ {
		for f := uint8(0); f+1 < nd; f++ {
			for _, idx := range []bool{false, true} {
				s := layout.Signature{Class: layout.ClassTile, NDim: nd, Fast: f, Itemsize: 3, Vec: 4, Index64: idx}
				if !have[s] {
					t.Errorf("default set lacks %v", s)
				}
			}
		}
	}
}
