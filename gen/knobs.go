package gen

import (
	"bufio"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/stridekit/stridekit/internal/tilegeom"
	"github.com/stridekit/stridekit/layout"
)

// Knobs are the launch parameters of one kernel: what a tuning table entry
// sets and what Source and Pack read. Each class uses some of them (the
// field comments say which); the table's header documents them too.
type Knobs struct {
	// Threads is the number of threads per block (every class).
	Threads int
	// Rows is how many rows (outer indices) one thread of the elementwise,
	// broadcast and fill kernels handles per loop trip, for kernels of two
	// or more dims, and how many elements a thread of the gather kernel
	// moves per trip: their loads are in flight together.
	Rows int
	// Unroll is how many 16-byte loads a thread of the contiguous kernel
	// keeps in flight; a thread of the box-tile kernel loads four times as
	// many elements of a strided src run of items under 4 bytes before it
	// stores them (at most 32 registers' worth).
	Unroll int
	// BlockBytes is the least tile data, in bytes, one block of the
	// box-tile kernel moves: a block takes ⌈BlockBytes / the tile's
	// bytes⌉ tiles in turn (at least one, and fewer where the grid would
	// then leave multiprocessors without a block), and the grid has as many
	// blocks as that leaves, which the GPU hands to its multiprocessors as
	// earlier blocks finish. A grid of as many blocks as fit at once, each
	// looping over a fixed share of the tiles, left multiprocessors idle
	// while others finished their last tiles (docs/design.md).
	BlockBytes int
	// WordCols makes the tile kernel, for items under 4 bytes, read one
	// 4-byte word of each of Vec tile rows in its store phase instead of
	// whole vectors: a quarter of the registers, so more threads fit.
	WordCols bool
	// StageStores makes the tile kernel, for vectors whose bytes are a
	// multiple of 4 but not a power of two (four 3-byte items, 12 bytes),
	// move each tile row as 4-byte words with a warp on consecutive words:
	// loads straight into the tile, stores through a second shared buffer
	// that holds the transposed tile in dst's order. A warp's accesses of
	// whole 12-byte vectors are three word accesses 12 bytes apart, each
	// touching a third of the bytes of its sectors, so the L2 takes three
	// partial writes of every dst sector.
	StageStores bool
	// Pipe is how many tiles one block of the tile kernel takes in turn
	// (0 or 1: one, the grid a block a tile). From 2 on, the block issues
	// its next tile's loads as asynchronous copies (cp.async) into a
	// second tile buffer before it stores the current tile, so a block
	// keeps loads in flight while it stores instead of waiting a whole
	// memory latency for each tile. For vectors of 4, 8 or 16 bytes and
	// StageStores' words; others ignore it.
	Pipe int
	// TileBytes is the data of one box tile in bytes (layout.PlanOptions'
	// TileBytes: the planner sizes the tile, the kernel stages it).
	TileBytes int
	// LoadLanes and StoreLanes are the most threads of a warp that work on
	// one src run (load, in quarters: a src run moves in 4-byte words, so
	// 4·LoadLanes threads share one) and one dst run (store, in 16-byte
	// pieces) of a box tile; powers of two. More lanes make longer bursts
	// on one run, fewer spread a warp over neighbouring runs (fewer
	// shared-memory bank conflicts).
	LoadLanes, StoreLanes int
	// ElemStore makes the box-tile kernel write each dst run one element
	// per thread (lanes on consecutive elements) instead of in 16-byte
	// pieces: for items of 4 bytes or less, one shared-memory read per
	// element without bank conflicts beats assembling a piece from items
	// that lanes a piece apart read from the same banks.
	ElemStore bool
	// OverlapTables makes the box-tile kernel build its dst runs' tables
	// (per run: offset, shared-memory base, ragged coordinates; per run
	// element: shared-memory offset) while the block's first tile's words
	// are in flight, between issuing them and waiting for them, instead of
	// with the src runs' tables before any load: the block's first barrier
	// then waits for less.
	OverlapTables bool
	// CalcOffsets makes specialised box-tile kernels whose dst runs have
	// one dim compute, in the element-wise, sibling and word stores, each
	// run element's shared-memory offset, i·w, instead of reading it from
	// the element table. A table read is a shared-memory access an
	// element, as many as the element's own, where 1-byte copies are bound
	// by the shared-memory pipe. Generic kernels, and runs of several
	// dims, keep the table: there the arithmetic cost more than the read.
	CalcOffsets bool
	// LoadGrain is the grain the planner lays a box tile's src runs out
	// at in shared memory (layout.PlanOptions.LoadGrain): 4 (or 0) for
	// 4-byte words, 16 for 16-byte chunks where the plan allows them
	// without bank conflicts in the store phase. A kernel specialised to
	// such a plan stages its contiguous src runs with 16-byte cp.async
	// copies, a quarter of the word copies; generic kernels keep words.
	LoadGrain int
	// CutFirst makes the box-tile kernel, where its src runs are short
	// (under 256 bytes) and the tiles either side of the dim that cuts
	// them lie more than CutFirst bytes of copy apart in the canonical
	// order (0: never), number its tiles with the dims that cut a run of
	// either view (the last dim of a run, where the tile holds part of
	// its extent) varying fastest (tileOrder). The tiles on either side
	// of a cut share the sectors it falls in: numbered close together
	// they run at about the same time, and the second finds those
	// sectors in L2; numbered a whole plane of tiles apart, as a src cut
	// can be in dst's order, it reads them from DRAM again.
	CutFirst int
	// Siblings makes the box-tile kernel, for 1-byte items whose src runs
	// cross the dst runs, write 4 dst runs at once, a 4×4-byte block
	// transposed in registers at a time (the template's storeSiblings),
	// where the plan allows.
	Siblings bool
	// GatherWord is how many bytes a thread of the gather kernel writes as
	// one dst word, its items loaded one by one (0: each item alone; 4, 8
	// or 16, for items that divide it and are smaller), where the plan's
	// dst allows (gatherwords.go): one unravelling of the indices a word
	// instead of one an item.
	GatherWord int
	// Specialise lets a copy that runs again get a kernel specialised to
	// its plan (kernels.Bound.SpecialiseLater: compiled in the background,
	// swapped in when ready): set where that was measured faster than the
	// generic kernel.
	Specialise bool
	// WordStore makes the box-tile kernel specialised to a plan write
	// contiguous dst runs of WordStore bytes or more (0: none) in aligned
	// 4-byte words, each merged from the two items it straddles (the
	// template's storeWords), for items of 3 bytes or more that are not
	// whole words (3, 5, 6, 7 bytes...), instead of ElemStore's granules or
	// 16-byte pieces. The launch (lanes included) is the generic kernel's.
	WordStore int
	// TripleStore makes the box-tile kernel, for 3-byte items, write
	// contiguous dst runs of TripleStore bytes or more (0: none) as groups
	// of three aligned 4-byte words, each the bytes of four whole items
	// read from shared memory and merged in registers (the template's
	// storeTriples), StoreLanes threads a run at most: a quarter of the
	// shared-memory reads of WordStore's words and a third of
	// ElemStore's global stores. Both tiers; it comes before WordStore.
	TripleStore int
	// SpecialiseDims is the fewest canonical dims a signature needs for
	// Specialise to hold (0: any): KnobsFor clears Specialise for
	// signatures of fewer, so that a table can specialise the plans of an
	// item size that gain from it (many dims, whose generic kernel unravels
	// more indices at run time) and not the ones that lose.
	SpecialiseDims int
	// SpecialiseSrcRun is, for box tiles, the most bytes a plan's src runs
	// may hold for Specialise to hold (0: any): a plan-dependent bound,
	// applied where the plan is known (SpecialisesPlan), for an item size
	// whose specialised kernel gains on tiles of short src runs and loses on
	// long ones.
	SpecialiseSrcRun int
	// CutRuns lets the planner cut a box tile's src runs after fewer dims
	// where that at least halves the wavefronts of the store phase's
	// shared-memory reads and leaves src runs of CutRuns bytes or more
	// (any length where the reads are 16-way conflicted; 0: never;
	// layout.PlanOptions.CutSrcRuns): a planner knob, as LoadGrain is; both
	// tiers run the plan it makes.
	CutRuns int
}

// SpecialisesPlan reports whether a copy of plan p bound with knobs k gets
// its specialised kernel when it runs again: k.Specialise, unless p is a
// box tile whose src runs hold more than k.SpecialiseSrcRun bytes.
func (k *Knobs) SpecialisesPlan(p *layout.Plan) bool {
	if !k.Specialise || k.SpecialiseSrcRun == 0 || p.Box == nil {
		return k.Specialise
	}
	return p.Box.Src.RunLen*int64(p.Sig.Itemsize) <= int64(k.SpecialiseSrcRun)
}

// fitDims clears k.Specialise for a signature of fewer canonical dims than
// k.SpecialiseDims.
func (k *Knobs) fitDims(sig layout.Signature) {
	if int(sig.NDim) < k.SpecialiseDims {
		k.Specialise = false
	}
}

// ErrTuning reports a malformed tuning table.
var ErrTuning = errors.New("gen: bad tuning table")

//go:embed tuning.txt
var tuningText string

var tuning struct {
	once    sync.Once
	entries []TuningEntry
	err     error
	source  string
	mu      sync.RWMutex
	over    map[knobKey]Knobs // Override's entries
	anyOver atomic.Bool       // over has entries (set under mu): KnobsFor skips the lock while it is false
}

type knobKey struct {
	arch int
	sig  layout.Signature
}

// knobTable is the one list of the knobs as a tuning table names them, in the
// order its header documents them (the order an entry is written in), with
// how each reads and writes its Knobs field (booleans as 0 or 1). Get, Set,
// ParseTuning and KnobNames all go through it.
var knobTable = [...]struct {
	name string
	get  func(*Knobs) int
	set  func(*Knobs, int)
}{
	{"threads", func(k *Knobs) int { return k.Threads }, func(k *Knobs, v int) { k.Threads = v }},
	{"rows", func(k *Knobs) int { return k.Rows }, func(k *Knobs, v int) { k.Rows = v }},
	{"unroll", func(k *Knobs) int { return k.Unroll }, func(k *Knobs, v int) { k.Unroll = v }},
	{"blockbytes", func(k *Knobs) int { return k.BlockBytes }, func(k *Knobs, v int) { k.BlockBytes = v }},
	{"wordcols", func(k *Knobs) int { return b2i(k.WordCols) }, func(k *Knobs, v int) { k.WordCols = v != 0 }},
	{"stagestores", func(k *Knobs) int { return b2i(k.StageStores) }, func(k *Knobs, v int) { k.StageStores = v != 0 }},
	{"pipe", func(k *Knobs) int { return k.Pipe }, func(k *Knobs, v int) { k.Pipe = v }},
	{"tilebytes", func(k *Knobs) int { return k.TileBytes }, func(k *Knobs, v int) { k.TileBytes = v }},
	{"loadlanes", func(k *Knobs) int { return k.LoadLanes }, func(k *Knobs, v int) { k.LoadLanes = v }},
	{"storelanes", func(k *Knobs) int { return k.StoreLanes }, func(k *Knobs, v int) { k.StoreLanes = v }},
	{"elemstore", func(k *Knobs) int { return b2i(k.ElemStore) }, func(k *Knobs, v int) { k.ElemStore = v != 0 }},
	{"siblings", func(k *Knobs) int { return b2i(k.Siblings) }, func(k *Knobs, v int) { k.Siblings = v != 0 }},
	{"gatherword", func(k *Knobs) int { return k.GatherWord }, func(k *Knobs, v int) { k.GatherWord = v }},
	{"specialise", func(k *Knobs) int { return b2i(k.Specialise) }, func(k *Knobs, v int) { k.Specialise = v != 0 }},
	{"wordstore", func(k *Knobs) int { return k.WordStore }, func(k *Knobs, v int) { k.WordStore = v }},
	{"triplestore", func(k *Knobs) int { return k.TripleStore }, func(k *Knobs, v int) { k.TripleStore = v }},
	{"specialisedims", func(k *Knobs) int { return k.SpecialiseDims }, func(k *Knobs, v int) { k.SpecialiseDims = v }},
	{"overlaptables", func(k *Knobs) int { return b2i(k.OverlapTables) }, func(k *Knobs, v int) { k.OverlapTables = v != 0 }},
	{"calcoffsets", func(k *Knobs) int { return b2i(k.CalcOffsets) }, func(k *Knobs, v int) { k.CalcOffsets = v != 0 }},
	{"loadgrain", func(k *Knobs) int { return k.LoadGrain }, func(k *Knobs, v int) { k.LoadGrain = v }},
	{"cutfirst", func(k *Knobs) int { return k.CutFirst }, func(k *Knobs, v int) { k.CutFirst = v }},
	{"specialisesrcrun", func(k *Knobs) int { return k.SpecialiseSrcRun }, func(k *Knobs, v int) { k.SpecialiseSrcRun = v }},
	{"cutruns", func(k *Knobs) int { return k.CutRuns }, func(k *Knobs, v int) { k.CutRuns = v }},
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// knobIndex returns the index in knobTable of the knob a tuning table calls
// name, or -1.
func knobIndex(name string) int {
	for i := range knobTable {
		if knobTable[i].name == name {
			return i
		}
	}
	return -1
}

// KnobNames returns the names a tuning table gives the knobs, in the order
// its header documents them (the order an entry is written in).
func KnobNames() []string {
	out := make([]string, len(knobTable))
	for i := range knobTable {
		out[i] = knobTable[i].name
	}
	return out
}

// TuningEntry is one parsed line of a tuning table: Arch 0 means "any",
// Item and Vec 0 mean "*"; Set maps knob names to values.
type TuningEntry struct {
	Arch      int
	Class     layout.Class
	Item, Vec int
	Set       map[string]int
}

// ParseTuning reads a tuning table in the format of the embedded
// tuning.txt; errors name the line and wrap ErrTuning.
func ParseTuning(name string, r io.Reader) ([]TuningEntry, error) {
	var out []TuningEntry
	sc := bufio.NewScanner(r)
	for line := 1; sc.Scan(); line++ {
		text, _, _ := strings.Cut(sc.Text(), "#")
		f := strings.Fields(text)
		if len(f) == 0 {
			continue
		}
		bad := func(format string, a ...any) error {
			return fmt.Errorf("%w: %s:%d: %s", ErrTuning, name, line, fmt.Sprintf(format, a...))
		}
		if len(f) < 4 {
			return nil, bad("want ARCH CLASS ITEM VEC KNOB=VALUE..., got %q", sc.Text())
		}
		var e TuningEntry
		switch {
		case f[0] == "any":
		case strings.HasPrefix(f[0], "sm_"):
			a, err := strconv.Atoi(f[0][3:])
			if err != nil || a <= 0 {
				return nil, bad("arch %q is not sm_XY or any", f[0])
			}
			e.Arch = a
		default:
			return nil, bad("arch %q is not sm_XY or any", f[0])
		}
		c, err := layout.ParseClass(f[1])
		if err != nil || c == layout.ClassNone || c == layout.ClassMemcpy {
			return nil, bad("class %q has no kernel", f[1])
		}
		e.Class = c
		for i, p := range []*int{&e.Item, &e.Vec} {
			if f[2+i] == "*" {
				continue
			}
			v, err := strconv.Atoi(f[2+i])
			if err != nil || v < 1 || v > layout.MaxVectorBytes {
				return nil, bad("%s %q is not * or 1..16", []string{"item", "vec"}[i], f[2+i])
			}
			*p = v
		}
		e.Set = map[string]int{}
		for _, kv := range f[4:] {
			k, v, ok := strings.Cut(kv, "=")
			n, err := strconv.Atoi(v)
			if !ok || err != nil || n < 0 {
				return nil, bad("knob %q is not NAME=N", kv)
			}
			if knobIndex(k) < 0 {
				return nil, bad("unknown knob %q (want one of %s)", k, strings.Join(KnobNames(), ", "))
			}
			e.Set[k] = n
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return out, nil
}

// loadTuning reads the tuning table: the file named by $STRIDEKIT_TUNING
// if set (a table `stridebench tune` wrote on this machine's GPU, used
// before it is committed), else the embedded tuning.txt. An unreadable or
// malformed file falls back to the embedded table; TuningSource says which
// table is in use and why.
func loadTuning() error {
	tuning.once.Do(func() {
		tuning.source = "embedded tuning.txt"
		if path := os.Getenv("STRIDEKIT_TUNING"); path != "" {
			b, err := os.ReadFile(path)
			if err == nil {
				var es []TuningEntry
				if es, err = ParseTuning(path, strings.NewReader(string(b))); err == nil {
					tuning.entries, tuning.source = es, path
					return
				}
			}
			tuning.source = fmt.Sprintf("embedded tuning.txt ($STRIDEKIT_TUNING: %v)", err)
		}
		tuning.entries, tuning.err = ParseTuning("tuning.txt", strings.NewReader(tuningText))
	})
	return tuning.err
}

// TuningSource names the tuning table KnobsFor reads: "embedded
// tuning.txt", or the file $STRIDEKIT_TUNING names (with the reason it was
// not used, if it was not).
func TuningSource() string {
	loadTuning()
	return tuning.source
}

// BoxPlanOptions returns the planner options the tuning table gives box
// tiles of item-byte elements on arch (TileBytes, LoadGrain, TripleStore
// and CutSrcRuns, from the knobs of the box-tile signature of that item
// size; the alignments are left for the caller): the options a copy on
// that device is planned with, for kernels and for tests that pin those
// plans.
func BoxPlanOptions(item, arch int) layout.PlanOptions {
	item = min(max(item, 1), layout.MaxVectorBytes)
	k := KnobsFor(layout.Signature{Class: layout.ClassBoxTile, Itemsize: uint8(item), Vec: 1}, arch)
	o := layout.PlanOptions{TileBytes: k.TileBytes, LoadGrain: k.LoadGrain, TripleStore: k.TripleStore, CutSrcRuns: k.CutRuns}
	if k.LoadGrain != tilegeom.ChunkGrain {
		o.LoadGrain = 0 // words: any other value
	}
	return o
}

// KnobsFor returns the knobs of the kernel for sig on a device of compute
// capability arch (90 for sm_90; 0 for the portable heuristic): an
// Override for them if one is set, else the tuning table's matching
// entries, applied from the least to the most specific. Knobs a table
// leaves unset get safe defaults (256 threads, one of everything else).
func KnobsFor(sig layout.Signature, arch int) Knobs {
	if tuning.anyOver.Load() {
		tuning.mu.RLock()
		k, ok := tuning.over[knobKey{arch, sig}]
		tuning.mu.RUnlock()
		if ok {
			return k
		}
	}
	if loadTuning() != nil {
		return LookupKnobs(nil, sig, arch)
	}
	k := tableKnobs(sig, arch)
	if env := os.Getenv("STRIDEKIT_KNOBS"); env != "" {
		// A copy, so that k itself stays off the heap when no override is set.
		kk := k
		envKnobs(env, sig, &kk)
		k = kk
	}
	k.fitDims(sig)
	return k
}

// tableMemo holds the knobs the tuning table in use gives each signature
// and arch asked for: the table is read once per process, so its answers
// never change, and a first copy of a new pair then costs a map read
// rather than a pass over the table per specificity.
var tableMemo struct {
	mu sync.RWMutex
	m  map[knobKey]Knobs
}

// tableKnobs returns LookupKnobs(tuning.entries, sig, arch), remembered.
func tableKnobs(sig layout.Signature, arch int) Knobs {
	key := knobKey{arch, sig}
	tableMemo.mu.RLock()
	k, ok := tableMemo.m[key]
	tableMemo.mu.RUnlock()
	if ok {
		return k
	}
	k = LookupKnobs(tuning.entries, sig, arch)
	tableMemo.mu.Lock()
	if tableMemo.m == nil {
		tableMemo.m = map[knobKey]Knobs{}
	}
	tableMemo.m[key] = k
	tableMemo.mu.Unlock()
	return k
}

// LookupKnobs returns the knobs a tuning table's entries give sig on a
// device of compute capability arch, by KnobsFor's rule but without
// overrides or $STRIDEKIT_KNOBS: the matching entries' knobs applied from
// the least to the most specific (an arch beats "any", then an item size
// *, then a vector width *), over safe defaults (256 threads, one of
// everything else) for knobs no entry sets. The tuner reads tables other
// than the one in use through it.
func LookupKnobs(entries []TuningEntry, sig layout.Signature, arch int) Knobs {
	k := Knobs{Threads: 256, Rows: 1, Unroll: 1, BlockBytes: 1, TileBytes: layout.DefaultTileBytes, LoadLanes: 1, StoreLanes: 1}
	// Specificity: arch 4, item 2, vec 1; apply in increasing order, stable.
	for spec := 0; spec < 8; spec++ {
		for _, e := range entries {
			if e.Class != sig.Class || (e.Arch != 0 && e.Arch != arch) || (e.Item != 0 && e.Item != int(sig.Itemsize)) || (e.Vec != 0 && e.Vec != int(sig.Vec)) {
				continue
			}
			s := 0
			if e.Arch != 0 {
				s += 4
			}
			if e.Item != 0 {
				s += 2
			}
			if e.Vec != 0 {
				s++
			}
			if s == spec {
				for name, v := range e.Set {
					k.Set(name, v)
				}
			}
		}
	}
	k.fitDims(sig)
	return k
}

// Get returns the knob of k that a tuning table calls name (wordcols and
// elemstore as 0 or 1), and false for another name.
func (k Knobs) Get(name string) (int, bool) {
	if i := knobIndex(name); i >= 0 {
		return knobTable[i].get(&k), true
	}
	return 0, false
}

// Set sets the knob of k that a tuning table calls name (KnobNames; a
// boolean knob is set by any value but 0); it reports false, changing
// nothing, for another name.
func (k *Knobs) Set(name string, v int) bool {
	i := knobIndex(name)
	if i < 0 {
		return false
	}
	knobTable[i].set(k, v)
	return true
}

// envKnobs applies env, the value of $STRIDEKIT_KNOBS, an experimenter's
// override of the table: entries "CLASS[/ITEM] KNOB=VALUE ..." separated
// by ';' (e.g. "btile threads=128 storelanes=4; tile/1 wordcols=0"),
// applied to the signatures they match. Bad entries are ignored: KnobsFor cannot fail, and
// CheckKnobs refuses the result when it renders.
func envKnobs(env string, sig layout.Signature, k *Knobs) {
	for _, entry := range strings.Split(env, ";") {
		f := strings.Fields(entry)
		if len(f) < 2 {
			continue
		}
		cls, item, _ := strings.Cut(f[0], "/")
		if c, err := layout.ParseClass(cls); err != nil || c != sig.Class {
			continue
		}
		if item != "" && item != strconv.Itoa(int(sig.Itemsize)) {
			continue
		}
		for _, kv := range f[1:] {
			name, v, _ := strings.Cut(kv, "=")
			if n, err := strconv.Atoi(v); err == nil {
				k.Set(name, n)
			}
		}
	}
}

// Override makes KnobsFor(sig, arch) return k until ClearOverrides, for the
// tuner, which renders and times a kernel under candidate knobs. The knobs
// are checked (CheckKnobs).
func Override(sig layout.Signature, arch int, k Knobs) error {
	if err := CheckKnobs(sig, k); err != nil {
		return err
	}
	tuning.mu.Lock()
	defer tuning.mu.Unlock()
	if tuning.over == nil {
		tuning.over = map[knobKey]Knobs{}
	}
	tuning.over[knobKey{arch, sig}] = k
	tuning.anyOver.Store(true)
	return nil
}

// ClearOverrides drops every Override.
func ClearOverrides() {
	tuning.mu.Lock()
	tuning.over = nil
	tuning.anyOver.Store(false)
	tuning.mu.Unlock()
}

// CheckKnobs reports knobs no kernel of sig can run with: threads outside
// 32..1024 or not a multiple of 32, lanes that are not powers of two up to
// 32, a tile size outside layout's limits, and zero counts.
func CheckKnobs(sig layout.Signature, k Knobs) error {
	pow2 := func(v int) bool { return v > 0 && v&(v-1) == 0 }
	switch {
	case k.Threads < 32 || k.Threads > 1024 || k.Threads%32 != 0:
		return fmt.Errorf("%w: %v: threads=%d is not a multiple of 32 in 32..1024", ErrTuning, sig, k.Threads)
	case k.Rows < 1 || k.Rows > 16 || k.Unroll < 1 || k.Unroll > 16:
		return fmt.Errorf("%w: %v: rows=%d unroll=%d must be in 1..16", ErrTuning, sig, k.Rows, k.Unroll)
	case k.BlockBytes < 1 || k.BlockBytes > maxBlockBytes:
		return fmt.Errorf("%w: %v: blockbytes=%d outside 1..%d", ErrTuning, sig, k.BlockBytes, maxBlockBytes)
	case !pow2(k.LoadLanes) || k.LoadLanes > 32 || !pow2(k.StoreLanes) || k.StoreLanes > 32:
		return fmt.Errorf("%w: %v: loadlanes=%d storelanes=%d must be powers of two up to 32", ErrTuning, sig, k.LoadLanes, k.StoreLanes)
	case k.TileBytes < layout.MinTileBytes || k.TileBytes > layout.MaxTileBytes:
		return fmt.Errorf("%w: %v: tilebytes=%d outside %d..%d", ErrTuning, sig, k.TileBytes, layout.MinTileBytes, layout.MaxTileBytes)
	case k.WordStore < 0 || k.TripleStore < 0:
		return fmt.Errorf("%w: %v: wordstore=%d triplestore=%d: negative", ErrTuning, sig, k.WordStore, k.TripleStore)
	case k.CutFirst < 0 || k.CutFirst > maxCutFirst:
		return fmt.Errorf("%w: %v: cutfirst=%d outside 0..%d", ErrTuning, sig, k.CutFirst, maxCutFirst)
	case k.Pipe < 0 || k.Pipe > maxPipe:
		return fmt.Errorf("%w: %v: pipe=%d outside 0..%d", ErrTuning, sig, k.Pipe, maxPipe)
	case k.GatherWord != 0 && k.GatherWord != 4 && k.GatherWord != 8 && k.GatherWord != 16:
		return fmt.Errorf("%w: %v: gatherword=%d is not 0, 4, 8 or 16", ErrTuning, sig, k.GatherWord)
	}
	return nil
}

// maxCutFirst bounds Knobs.CutFirst: 1 GiB of copy.
const maxCutFirst = 1 << 30

// maxPipe bounds Knobs.Pipe.
const maxPipe = 64

// maxBlockBytes bounds Knobs.BlockBytes: 64 of the largest tiles.
const maxBlockBytes = 64 * layout.MaxTileBytes

// TuningTable returns the embedded tuning table's text.
func TuningTable() string { return tuningText }
