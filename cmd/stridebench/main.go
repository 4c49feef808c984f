// Command stridebench measures stridekit's strided copies on a GPU against
// memcpy, against the peer frameworks (PyTorch, CuPy, XLA through JAX) and
// against the physical limit, in one run; tunes the copy kernels' launch
// knobs for the GPU; and writes the benchmark record.
//
// Usage:
//
//	stridebench [run] [flags]     measure (the default subcommand)
//	stridebench tune [flags]      tune the launch knobs into gen/tuning.txt
//	stridebench report -json RUN.json [-json2 RANDOM.json] [-o docs/benchmarks.md]
//	stridebench compare -old BEFORE.json -new AFTER.json
//	stridebench peer [flags]      copies between two GPUs against cuMemcpyPeer
//	stridebench reshard [flags]   resharding over NCCL against its all-to-all
//
// The first argument names a subcommand when it does not start with '-';
// each subcommand's -h lists its flags.
//
// # What a run does
//
// It reads the cases of a suite (default: the named suite built into the
// binary, named.txt in this directory; -suite FILE reads another) and/or
// generates random ones, keeps those whose name matches -case, and for
// each case:
//
//  1. Builds the source and destination views with package layout, and the
//     views the copy runs on with runtime/memview, what users call: once
//     per pair of arrays, memview.FromBuffer over the whole allocation and
//     ViewAt at each view's index 0. The signature reported is that of the
//     plan (*StridedMemoryView).Explain gives for them, and the path is
//     Explain's (device).
//  2. Checks correctness: fills the source array with a seeded pattern,
//     poisons the destination array, runs the stridekit copy once and
//     compares the destination with runtime/hostcopy's copy on the host: all
//     of it up to 64 MiB, else its first and last 4 KiB and six random 1 MiB
//     windows. Source bytes never have bit 6 set and the poison byte 0xE5
//     does, so an unwritten byte is always caught (and no float in the source
//     is a NaN). A mismatch marks the case failed; the run goes on.
//  3. Times dst.CopyFrom(src, stream) with CUDA events after -warmup
//     copies (each copy plans and launches, as a user's does): the median of
//     -reps samples, each covering at least 200 µs (shorter copies are timed
//     in batches of back-to-back copies). When a case's arrays take less
//     than four times the L2 cache (CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE), the
//     copies rotate over enough pairs of arrays to cover four times the L2
//     size, so every copy goes to DRAM. cuMemcpyDtoD of the bytes the copy writes is timed the
//     same way, on the same stream, over the same arrays.
//  4. For cases of at most 1 MiB, also measures the host time per copy
//     (back-to-back copies from Go, synchronised at the end) next to bare
//     cuLaunchKernel calls of the same kernel with its arguments packed once
//     (the driver's floor).
//
// With -compare it then runs peers.py (embedded in the binary; -peers runs
// another copy) with the Python of -python on the same expanded case list,
// written as JSON, so random cases reach the peers too. See peers.py for how
// each framework builds its views and is timed; every peer figure is a % of
// that framework's own memcpy of the same bytes in the same run, and the
// JAX column is marked untrusted when its identity copy is not within
// 85–115% of a real memcpy.
//
// Everything the harness calls of stridekit's copy is in copier.go, so the
// entry point it times can be changed in one place.
//
// A signal (Ctrl-C, or the SIGTERM of timeout(1)) stops the run after the
// case in progress: the cases that ran are reported and written as usual,
// marked interrupted, and the exit status is 1.
//
// # Figures
//
//   - time: median seconds per copy.
//   - GB/s: (bytes read + bytes written) / time, counting each element of the
//     destination once read and once written (2 × the bytes written).
//   - % memcpy: memcpy's time for the bytes the copy writes / the copy's time.
//   - % roofline: the roofline time / the copy's time. The roofline is the
//     time memcpy's measured bandwidth (2 × bytes / memcpy time) needs to move
//     the bytes DRAM must move for the case: 32 bytes for each distinct
//     32-byte sector that the source view touches plus each one the
//     destination view touches. A strided source costs whole sectors (a[:, ::2]
//     of float32 reads every sector of its span), a broadcast source is read
//     once (its stride-0 dims are dropped), and a transpose costs what a
//     memcpy costs. Sectors are counted exactly, in a bitmap over each view's
//     byte span, walking the rows of the view's canonical form from
//     layout.PlanCopy; the arrays are 256-byte aligned. "roofline % memcpy"
//     is the best % of memcpy the case can reach (above 100 for broadcasts).
//   - per peer: its % of its own memcpy, and stridekit's % of memcpy divided
//     by the peer's ("vs"; above 1 means stridekit is faster).
//
// # Outputs
//
// Standard output gets Go benchmark lines, so benchstat can compare two runs:
//
//	BenchmarkCopy/<case>  N  T ns/op  X MB/s  P pct-memcpy  R pct-roofline …
//
// with <peer>-pct-memcpy for each peer that ran, and host-ns/copy,
// floor-ns/copy and torch-host-ns/copy for small cases; failed cases get a
// "--- FAIL:" line. -json writes every figure as JSON, -md a markdown report,
// and -chart a bar chart (PNG or SVG by the file's extension): one group of
// bars per case, stridekit and each peer as a % of memcpy, the case's
// roofline drawn across the group. With random cases, the outputs add the
// distribution of % of memcpy and % of roofline (min, 10th percentile,
// median), the -slowest cases with their signatures and, with -compare,
// against each peer: on how many random cases stridekit was faster, and the
// median and least ratio of stridekit's % of memcpy to the peer's (cases
// whose peer timing is untrusted are left out and counted). A progress bar
// runs on standard error when it is a terminal and -quiet is not set.
//
// Exit status: 0 when every case passed, 1 when a case failed or a run
// (GPU, peers) could not be done, 2 on bad usage.
//
// # Flags
//
//	-suite FILE         the named cases (default: the suite built into the
//	                    binary, a copy of testdata/bench/named.txt); with
//	                    -random and no -suite, only random cases run
//	-case REGEXP        run only the cases whose name matches
//	-random N           add N random cases (at most 10000); -seed S (default
//	                    1) picks them, -random-views adds slices and flips,
//	                    -random-bytes SIZE (default 256MiB, at most 16GiB) is
//	                    about what each moves
//	-device D           gpu (default), gpu:N for device ordinal N, or cpu
//	-reps N             timed samples per copy, 20 to 10000 (default 30)
//	-warmup N           untimed copies first, 1 to 10000 (default 5)
//	-latency-iters N    copies for the host time per copy of small cases
//	                    (default 2000, at most 1000000; 0 skips it)
//	-shrink SIZE        shrink cases that move more than SIZE bytes
//	-compare            also run the peers; -python (default python3), -peers
//	                    FILE (another peers.py), -frameworks (default
//	                    torch,cupy,jax)
//	-json FILE, -md FILE, -chart FILE.png|.svg   the reports
//	-slowest N          how many of the slowest random cases to list (default
//	                    10, at most 10000)
//	-quiet              no progress bar
//	-list               print the cases as they would run, and exit
//
// Sizes are written 4096, 64KiB, 256MiB or 1GiB.
//
// # Case syntax
//
// A suite file holds one case a line; '#' starts a comment. A case is
//
//	NAME DTYPE SHAPE [src=EXPR] [dst=EXPR] [dstbase=SHAPE]
//
// NAME is letters, digits and _ . + - ; DTYPE is any name layout.ParseDType
// accepts (float32, f16, bf16, uint8, complex128, opaque12, …) or xN for
// opaque items of N bytes (x3, x12). SHAPE is the extents of the dense
// C-order source array, e.g. 16384x32768.
//
// src=EXPR is the source view taken of that array: operations joined by '.',
// applied left to right (no EXPR: the whole array):
//
//	perm(1,0)        permute dims: dim k of the result is dim p[k] (numpy.transpose)
//	slice(:, ::2)    Python slicing, one entry per dim (missing trailing dims stay
//	                 whole): start:stop:step with negative steps and bounds, or an
//	                 integer index, which drops its dim
//	flip(1)          reverse the listed dims (same as slice ::-1 on them)
//	bcast(16384,16384)  broadcast to a shape by NumPy's rules
//
// The destination is a dense C-order array viewed through dst=EXPR (default:
// none) and must have the source view's shape. Its shape is dstbase= when
// given; else it is worked out backwards from the source view's shape through
// the dst operations: perm(p) means "a dense array whose view through
// perm(p) has the source view's shape" (so NCHW to NHWC is a dense NCHW source
// and dst=perm(0,3,1,2) of a dense NHWC array), flip keeps the shape, and a
// slice entry with no bounds (":" or "::s") multiplies its extent by |s|.
// Other dst operations need dstbase=.
//
// Examples:
//
//	transpose_f32   float32 16384x16384  src=perm(1,0)
//	slice_t_f32     float32 16384x32768  src=slice(:,::2).perm(1,0)
//	nchw_nhwc_f16   f16     64x256x128x128  dst=perm(0,3,1,2)
//	bcast_row_f32   float32 1x16384      src=bcast(16384,16384)
//
// Random cases (-random N) are N-d permutations (plus slices and flips with
// -random-views) of ranks 2–8, item sizes 1, 2, 3, 4, 8, 12 and 16, extents
// 2–300 (some of them primes) whose product lands near -random-bytes
// (ranks too low to reach it with extents up to 300 are skipped). They are
// named rand-s<seed>-i<index> (randv- with views, -t<bytes> with a
// non-default size) and depend only on those, so -case reproduces any one.
//
// A case whose source and destination arrays take more than 32 GiB together
// is refused (the check keeps host copies of both), and so is one whose
// host buffers (those copies; with -device cpu the arrays too) would take
// more than half of the machine's physical memory.
//
// -shrink SIZE shrinks every case that moves more than SIZE bytes: every
// extent above 8 it names (the shape, bcast targets, dstbase, slice bounds) is
// multiplied by one factor, the largest that fits. -device cpu runs the whole
// pipeline on the host instead, for testing the harness without a GPU: the
// same memview copy between host views (memview.FromHost and ViewAt), which
// CopyFrom runs with runtime/hostcopy, timed with the wall clock; it shrinks
// to 4 MiB unless -shrink says otherwise.
//
// # Tuning
//
// "stridebench tune" sweeps the launch knobs of the copy kernels on the GPU
// and writes the winners into the tuning table (-o, default gen/tuning.txt;
// its header documents the format) as entries of the GPU's architecture,
// one per family: the box tile per item size (btile/1 … btile/16: threads,
// tilebytes, loadlanes, storelanes, blockbytes, unroll, elemstore,
// overlaptables, calcoffsets, loadgrain, cutfirst), the vectorised tile per item size and vector width
// (tile/1x16 … tile/8x2: threads, wordcols), elem, bcast and fill
// (threads, rows).
// Each family is timed on two or three representative cases of about
// -bytes each (-list prints them with their signatures; they are chosen
// among candidates by what the planner makes of them, so the tune follows
// the planner). Each candidate's kernel is rendered with its knobs
// (gen.Source), loaded (jit.Default.Function) and launched with them
// (jit.Launch) on plans made with its tile size, checked once per case
// against runtime/hostcopy, and timed with CUDA events: -reps samples per
// case, the candidates interleaved; its time is the sum over the cases of
// the median.
//
// The search is coordinate-wise from the table's current values, one knob
// at a time, for -rounds rounds or until a round changes nothing. A value
// replaces the current one only when it is faster by more than 2% and by
// more than twice the samples' spread (the larger interquartile range of
// the two); ties keep the current value; so a re-run on the same GPU keeps
// the table within noise. The whole tune stops at -budget (default 4m; each
// family gets a share). The rewrite replaces the entries of the tuned
// architecture and the comment the tuner wrote above them, keeps old
// entries of that architecture it did not rewrite, and leaves the header,
// the comments, the "any" heuristic and other architectures as they were;
// -dry-run prints the entries instead. Progress goes to stderr.
//
// # The record
//
// "stridebench report" writes docs/benchmarks.md (-o) and its chart (a
// PNG beside it) from the JSON of one run (-json) and, optionally, a second
// one (-json2, the random sweep): the date, GPU, NVIDIA driver, CUDA and
// NVRTC versions the runs recorded (and -smi, a file of nvidia-smi output),
// the commands, the named cases with the peers, the random distribution
// with its seed and slowest cases, the cases where a peer is faster, and
// "Cases short of 90%": every case under 90% (-short-of) of its reference
// (memcpy, or its roofline where that is more than 1% slower than memcpy:
// strided sources) with its signature, bytes moved and sectors, and an
// empty column for notes. It prints a summary: each named case's % of
// memcpy and the random distribution. scripts/bench-gpu runs the whole
// benchmark on the GPU machine and ends with it.
//
// # Comparing two runs
//
// "stridebench compare" reads two runs of the same cases (two builds, or
// two knob settings, run one after the other on one GPU) and prints, over
// the cases that passed in both, the ratios of their times: the geometric
// mean, the cases that moved by more than -threshold percent either way,
// both runs' min, p10 and median % of memcpy, the same by item size and by
// kernel class, each tier's ratio, and the cases that moved most.
package main

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/stridekit/stridekit/internal/meminfo"
	"github.com/stridekit/stridekit/kernels"
)

func main() {
	os.Exit(runMain(os.Args[1:], os.Stdout, os.Stderr))
}

// errUsage marks a command-line error (exit status 2).
var errUsage = errors.New("usage")

// usageErr returns a command-line error: errUsage with the message.
func usageErr(format string, a ...any) error {
	return fmt.Errorf("%w: %s", errUsage, fmt.Sprintf(format, a...))
}

// newFlagSet returns the flag set of a subcommand: errors and -h go to
// stderr, and its usage is head, the flags' defaults, then tail.
func newFlagSet(name string, stderr io.Writer, head, tail string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), head)
		fs.PrintDefaults()
		fmt.Fprint(fs.Output(), tail)
	}
	return fs
}

// parseArgs parses args with fs. It returns flag.ErrHelp as it is for -h,
// and an errUsage error for a bad flag or an argument left over.
func parseArgs(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	if fs.NArg() > 0 {
		return usageErr("unexpected argument %q", fs.Arg(0))
	}
	return nil
}

// flagsStatus ends a subcommand whose flags did not parse: for err from
// parseArgs, it prints any error but -h's on stderr after prefix and
// returns stop with the exit status (0 for -h, 2 for bad usage).
func flagsStatus(stderr io.Writer, prefix string, err error) (status int, stop bool) {
	switch {
	case err == nil:
		return 0, false
	case errors.Is(err, flag.ErrHelp):
		return 0, true
	default:
		fmt.Fprintf(stderr, "%s: %v\n", prefix, err)
		return 2, true
	}
}

// parseDevice reads -device: gpu or gpu:N (device ordinal N), and cpu when
// allowCPU; device is "gpu" or "cpu". Without allowCPU the error says that
// tuning needs a GPU.
func parseDevice(s string, allowCPU bool) (device string, ordinal int, err error) {
	switch {
	case s == "gpu" || s == "cpu" && allowCPU:
		return s, 0, nil
	case strings.HasPrefix(s, "gpu:"):
		n, err := strconv.Atoi(s[4:])
		if err != nil || n < 0 {
			return "", 0, usageErr("-device %q: the ordinal must be a non-negative integer", s)
		}
		return "gpu", n, nil
	case allowCPU:
		return "", 0, usageErr("-device %q: want gpu, gpu:N or cpu", s)
	default:
		return "", 0, usageErr("-device %q: want gpu or gpu:N (tuning needs a GPU)", s)
	}
}

// subcommands maps each subcommand to its entry point.
var subcommands = map[string]func(args []string, stdout, stderr io.Writer) int{
	"run":     runCmd,
	"tune":    tuneCmd,
	"report":  reportCmd,
	"compare": compareCmd,
	"peer":    peerCmd,
	"reshard": reshardCmd,
}

// runMain dispatches to a subcommand ("run" when the first argument is a
// flag or missing) and returns the exit status.
func runMain(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		if args[0] == "help" {
			runCmd([]string{"-h"}, stdout, stderr)
			return 0
		}
		cmd, ok := subcommands[args[0]]
		if !ok {
			fmt.Fprintf(stderr, "stridebench: unknown command %q (commands: run, tune, report, compare, peer, reshard; run is the default)\n", args[0])
			return 2
		}
		return cmd(args[1:], stdout, stderr)
	}
	return runCmd(args, stdout, stderr)
}

// Defaults and limits of the run flags.
const (
	defaultReps      = 30
	minReps          = 20
	maxReps          = 10000
	defaultWarmup    = 5
	maxWarmup        = 10000
	defaultLatency   = 2000
	maxLatency       = 1000000
	maxRandom        = 10000
	maxRandomBytes   = maxArrayBytes / 2 // a case's two arrays hold at least twice what it moves
	defaultCPUShrink = 4 << 20
)

// defaultSuiteText is the named suite that runs without -suite: named.txt,
// a copy of testdata/bench/named.txt, built into the binary so stridebench
// runs from any directory.
//
//go:embed named.txt
var defaultSuiteText []byte

// defaultSuiteName names the built-in suite in messages.
const defaultSuiteName = "named.txt (built in)"

// runFlags are the flags of "stridebench run".
type runFlags struct {
	suite        string
	suiteSet     bool
	caseRE       *regexp.Regexp
	random       int
	seed         uint64
	randomViews  bool
	randomBytes  int64
	device       string
	ordinal      int
	reps, warmup int
	latency      int
	shrink       int64
	compare      bool
	python       string
	peers        string
	frameworks   []string
	jsonPath     string
	mdPath       string
	chartPath    string
	slowest      int
	quiet        bool
	list         bool
}

// sizeValue is a flag holding a byte count written as 4096, 64KiB, 4MiB,
// 1GiB (K, M, G and the B suffix are accepted too, all powers of 1024).
type sizeValue struct{ n *int64 }

func (s sizeValue) String() string {
	if s.n == nil || *s.n == 0 {
		return "0"
	}
	return sizeString(*s.n)
}

func (s sizeValue) Set(v string) error {
	n, err := parseSize(v)
	if err != nil {
		return err
	}
	*s.n = n
	return nil
}

// parseSize reads a byte count with an optional binary suffix.
func parseSize(v string) (int64, error) {
	t := strings.TrimSpace(strings.ToLower(v))
	t = strings.TrimSuffix(strings.TrimSuffix(t, "b"), "i")
	mul := int64(1)
	if t != "" {
		switch t[len(t)-1] {
		case 'k':
			mul, t = 1<<10, t[:len(t)-1]
		case 'm':
			mul, t = 1<<20, t[:len(t)-1]
		case 'g':
			mul, t = 1<<30, t[:len(t)-1]
		}
	}
	n, err := strconv.ParseInt(strings.TrimSpace(t), 10, 64)
	if err != nil || n < 0 || n > (1<<62)/mul {
		return 0, fmt.Errorf("%q is not a size (e.g. 4096, 64KiB, 256MiB, 1GiB)", v)
	}
	return n * mul, nil
}

// helpHead and helpTail frame the flag list of -h.
const helpHead = `usage: stridebench [run] [flags]
       stridebench tune [flags]      tune the kernels' launch knobs (tune -h)
       stridebench report [flags]    write docs/benchmarks.md (report -h)
       stridebench compare [flags]   compare two runs of the same cases (compare -h)

Times stridekit's copy of each case (runtime/memview's CopyFrom) against
cuMemcpyDtoD, the roofline and (-compare) PyTorch, CuPy and JAX; prints Go
benchmark lines on stdout.

Flags:
`

const helpTail = `
Case syntax (one case a line of the suite file, '#' starts a comment):

  NAME DTYPE SHAPE [src=EXPR] [dst=EXPR] [dstbase=SHAPE]

  DTYPE  a layout.ParseDType name (float32, f16, bf16, uint8, complex128, ...)
         or xN for opaque N-byte items (x3, x12)
  SHAPE  extents of the dense C-order source array: 16384x32768
  EXPR   view operations joined by '.', applied left to right:
           perm(1,0)            permute dims (numpy.transpose)
           slice(:, ::2)        Python slicing per dim: start:stop:step
                                (negative steps allowed) or an index
           flip(1)              reverse dims
           bcast(16384,16384)   broadcast (NumPy rules)
  src=   the source view (default: the whole array)
  dst=   the destination view of a dense array; with no dstbase= its shape is
         worked back from the source view's shape: perm(p) is "a dense array
         whose view through perm(p) matches the source" (NCHW->NHWC is
         dst=perm(0,3,1,2)), flip keeps the shape, slice ::s multiplies by |s|
  e.g.   slice_t_f32 float32 16384x32768 src=slice(:,::2).perm(1,0)

Figures:
  GB/s        (bytes read + bytes written) / time = 2 x bytes written / time
  pct-memcpy  cuMemcpyDtoD time for the bytes written / copy time, same run,
              same stream, CUDA events, median of -reps
  roofline    the time memcpy's bandwidth needs for the bytes DRAM must move:
              32 bytes per distinct 32-byte sector the source view touches
              (strided reads cost whole sectors, broadcast sources count
              once) plus per sector the destination view touches, counted
              exactly over each view's canonical rows (layout.PlanCopy)
  pct-roofline  roofline time / copy time
  <peer>-pct-memcpy  (-compare) the framework's copy as a % of its own memcpy
              of the same bytes, same run; "vs <peer>" in the markdown is
              stridekit's pct-memcpy / the peer's (above 1: stridekit faster)
  small cases (<= 1 MiB): host-ns/copy is wall time per copy from Go over
              -latency-iters back-to-back copies; floor-ns/copy the same for
              bare cuLaunchKernel calls of the same kernel

Cases whose arrays take more than 32 GiB together are refused, and so are
cases whose host buffers would take more than half of the physical memory.

Limits: -reps 20..10000, -warmup 1..10000, -latency-iters 0..1000000,
-random 0..10000, -random-bytes up to 16GiB, -slowest 0..10000. Without
-suite the named suite built into stridebench runs (a copy of
testdata/bench/named.txt), from any directory.

Random cases: ranks 2-8, item sizes 1,2,3,4,8,12,16, extents 2-300 (some
prime), about -random-bytes each; named rand[v]-s<seed>-i<index>[-t<bytes>].

Exit status: 0 all cases passed, 1 a case or a run failed, 2 bad usage.
`

// parseRunFlags reads the flags of "stridebench run".
func parseRunFlags(args []string, stderr io.Writer) (*runFlags, error) {
	f := &runFlags{randomBytes: randDefaultBytes}
	fs := newFlagSet("stridebench run", stderr, helpHead, helpTail)
	fs.StringVar(&f.suite, "suite", "", "suite `file` of named cases (default: the named suite built into stridebench); with -random and no -suite, only random cases run")
	caseRE := fs.String("case", "", "run only the cases whose name matches this `regexp`")
	fs.IntVar(&f.random, "random", 0, fmt.Sprintf("add `N` random cases (N ≤ %d)", maxRandom))
	fs.Uint64Var(&f.seed, "seed", 1, "`seed` of the random cases")
	fs.BoolVar(&f.randomViews, "random-views", false, "random cases also slice and flip their source")
	fs.Var(sizeValue{&f.randomBytes}, "random-bytes", "bytes each random case moves, about (`size`: 4096, 64KiB, 256MiB, 1GiB; at most 16GiB)")
	fs.StringVar(&f.device, "device", "gpu", "where to run: gpu, gpu:N (device ordinal N) or cpu (the host, for testing the harness)")
	fs.IntVar(&f.reps, "reps", defaultReps, fmt.Sprintf("timed samples per copy, the median is reported (`N`: %d..%d)", minReps, maxReps))
	fs.IntVar(&f.warmup, "warmup", defaultWarmup, fmt.Sprintf("untimed copies before timing (`N`: 1..%d)", maxWarmup))
	fs.IntVar(&f.latency, "latency-iters", defaultLatency, fmt.Sprintf("back-to-back copies for the host time per copy of cases ≤ 1 MiB (`N` ≤ %d; 0: skip)", maxLatency))
	fs.Var(sizeValue{&f.shrink}, "shrink", "shrink cases that move more than `size` bytes (0: never; -device cpu defaults to 4MiB)")
	fs.BoolVar(&f.compare, "compare", false, "also run PyTorch, CuPy and JAX (peers.py) on the same cases")
	fs.StringVar(&f.python, "python", "python3", "Python `interpreter` for -compare")
	fs.StringVar(&f.peers, "peers", "", "peers.py `file` to run for -compare (default: the copy embedded in the binary)")
	frameworks := fs.String("frameworks", strings.Join(peerNames, ","), "comma-separated `list` of peers for -compare")
	fs.StringVar(&f.jsonPath, "json", "", "write every figure as JSON to `file`")
	fs.StringVar(&f.mdPath, "md", "", "write a markdown report to `file`")
	fs.StringVar(&f.chartPath, "chart", "", "write a bar chart to `file` (.png or .svg)")
	fs.IntVar(&f.slowest, "slowest", 10, fmt.Sprintf("list the `N` slowest random cases (N ≤ %d)", maxRandom))
	fs.BoolVar(&f.quiet, "quiet", false, "no progress bar")
	fs.BoolVar(&f.list, "list", false, "print the cases (after -random, -shrink and -case) and exit")
	if err := parseArgs(fs, args); err != nil {
		return nil, err
	}
	fs.Visit(func(fl *flag.Flag) {
		if fl.Name == "suite" {
			f.suiteSet = true
		}
	})
	var err error
	if f.caseRE, err = regexp.Compile(*caseRE); err != nil {
		return nil, usageErr("-case %q: %v", *caseRE, err)
	}
	if f.device, f.ordinal, err = parseDevice(f.device, true); err != nil {
		return nil, err
	}
	for _, c := range []flagRange{
		{"-reps", f.reps, minReps, maxReps}, {"-warmup", f.warmup, 1, maxWarmup},
		{"-latency-iters", f.latency, 0, maxLatency}, {"-random", f.random, 0, maxRandom},
		{"-slowest", f.slowest, 0, maxRandom},
	} {
		if err := c.check(); err != nil {
			return nil, err
		}
	}
	if f.random > 0 && f.randomBytes < 1 {
		return nil, usageErr("-random-bytes %d: must be positive", f.randomBytes)
	}
	if f.randomBytes > maxRandomBytes {
		return nil, usageErr("-random-bytes %s: must be at most %s", sizeString(f.randomBytes), sizeString(maxRandomBytes))
	}
	if f.chartPath != "" && !chartExt(f.chartPath) {
		return nil, usageErr("-chart %q: the file name must end in .png or .svg", f.chartPath)
	}
	for _, n := range strings.Split(*frameworks, ",") {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		if !slices.Contains(peerNames, n) {
			return nil, usageErr("-frameworks: unknown framework %q (want a subset of %s)", n, strings.Join(peerNames, ","))
		}
		f.frameworks = append(f.frameworks, n)
	}
	if f.compare && len(f.frameworks) == 0 {
		return nil, usageErr("-frameworks: empty list with -compare")
	}
	if f.device == "cpu" {
		shrinkSet := false
		fs.Visit(func(fl *flag.Flag) { shrinkSet = shrinkSet || fl.Name == "shrink" })
		if !shrinkSet {
			f.shrink = defaultCPUShrink
		}
	}
	return f, nil
}

// collectCases reads the suite and makes the random cases, shrinks them and
// keeps those -case selects. random marks the generated ones.
func collectCases(f *runFlags) ([]*Case, map[*Case]bool, error) {
	var cases []*Case
	if f.random == 0 || f.suiteSet {
		var cs []*Case
		var err error
		if f.suiteSet {
			cs, err = parseSuiteFile(f.suite)
		} else {
			cs, err = parseSuite(bytes.NewReader(defaultSuiteText), defaultSuiteName)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("%w: -suite: %w", errUsage, err)
		}
		cases = cs
	}
	random := map[*Case]bool{}
	if f.random > 0 {
		for _, c := range randomCases(randomSpec{N: f.random, Seed: f.seed, Views: f.randomViews, Bytes: randomTarget(f)}) {
			random[c] = true
			cases = append(cases, c)
		}
	}
	var out []*Case
	for _, c := range cases {
		if !f.caseRE.MatchString(c.Name) {
			continue
		}
		if f.shrink > 0 {
			if s, err := shrinkCase(c, f.shrink); err == nil && s != c {
				random[s] = random[c]
				c = s
			}
		}
		out = append(out, c)
	}
	return out, random, nil
}

// randomTarget is the size the random cases are generated at: -random-bytes,
// or -shrink where that is smaller (the size that will run).
func randomTarget(f *runFlags) int64 {
	if f.shrink > 0 && f.shrink < f.randomBytes {
		return f.shrink
	}
	return f.randomBytes
}

// runCmd is "stridebench run".
func runCmd(args []string, stdout, stderr io.Writer) int {
	f, err := parseRunFlags(args, stderr)
	if status, stop := flagsStatus(stderr, "stridebench", err); stop {
		return status
	}
	cases, random, err := collectCases(f)
	if err != nil {
		fmt.Fprintf(stderr, "stridebench: %v\n", err)
		return 2
	}
	if len(cases) == 0 {
		fmt.Fprintf(stderr, "stridebench: %v: no cases selected (check -suite, -random and -case)\n", errUsage)
		return 2
	}
	ps := prepare(cases, random)
	limitHostMemory(ps, f.device, hostMemory())
	if f.list {
		for _, p := range ps {
			if p.Err != nil {
				fmt.Fprintf(stdout, "%s\t# error: %v\n", p.Case, p.Err)
				continue
			}
			fmt.Fprintf(stdout, "%s\t# moves %s, dst %v, src %v\n", p.Case, humanSize(p.Built.Moved), p.Built.Dst, p.Built.Src)
		}
		return 0
	}

	var be backend
	if f.device == "cpu" {
		be = newCPUBackend()
	} else {
		// Each tier is timed on its own (runCase): no background compile
		// may swap a kernel in mid-measurement.
		kernels.SetBackgroundSpecialising(false)
		g, err := newGPUBackend(f.ordinal)
		if err != nil {
			fmt.Fprintf(stderr, "stridebench: -device gpu:%d: %v\n", f.ordinal, err)
			return 1
		}
		be = g
	}
	defer be.close()

	rep := &report{Tool: "stridebench", Started: time.Now().UTC(), Args: args, Device: be.info(), Reps: f.reps, Warmup: f.warmup}
	if f.random > 0 {
		rep.RandomSpec = &randomSpec{N: f.random, Seed: f.seed, Views: f.randomViews, Bytes: randomTarget(f)}
	}
	// An interrupt (Ctrl-C, or timeout's SIGTERM) stops the run after the
	// case in progress; what ran is reported and written as usual.
	ctx, stopSignals := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stopSignals()
	// Without peers, each case's benchmark line is written as soon as it is
	// measured, so an interrupted run keeps what it did.
	stream := !f.compare
	var outErr error
	keep := func(err error) {
		if outErr == nil && err != nil {
			outErr = fmt.Errorf("stdout: %w", err)
		}
	}
	if stream {
		keep(writeBenchHeader(stdout, rep.Device))
	}
	steps := len(ps)
	if f.compare {
		steps *= 2
	}
	bar := newProgress(stderr, steps, f.quiet)
	if len(ps) > 0 {
		bar.describe(ps[0].Case.Name)
	}
	next := 0
	rep.Cases = runCases(ctx, ps, be, runConfig{Reps: f.reps, Warmup: f.warmup, LatencyIters: f.latency}, func(r *result) {
		next++
		desc := "peers"
		if next < len(ps) {
			desc = ps[next].Case.Name
		}
		if stream {
			keep(writeBenchLine(stdout, r))
		}
		bar.step(desc)
	})
	// The device is not needed any more: let the peers have all of it.
	be.close()
	status := 0
	if len(rep.Cases) < len(ps) {
		rep.Interrupted = fmt.Sprintf("interrupted after %d of %d cases", len(rep.Cases), len(ps))
		status = 1
	}
	if f.compare && ctx.Err() == nil {
		opt := peerOptions{Python: f.python, Script: f.peers, Frameworks: f.frameworks, Reps: f.reps, Warmup: f.warmup, LatencyIters: f.latency}
		if bar == nil && !f.quiet {
			opt.Stderr = stderr
		}
		rep.Peers, err = runPeers(ctx, opt, ps, rep.Cases, func() { bar.step("peers") })
		if err != nil {
			rep.PeersErr = err.Error()
			if ctx.Err() != nil {
				rep.PeersErr = "interrupted: " + rep.PeersErr
			}
			status = 1
		}
	}
	bar.done()
	if rep.Interrupted != "" {
		fmt.Fprintf(stderr, "stridebench: %s\n", rep.Interrupted)
	}
	if rep.PeersErr != "" {
		fmt.Fprintf(stderr, "stridebench: %s\n", rep.PeersErr)
	}
	rep.Random = summarizeRandom(rep.Cases, f.slowest)
	for _, r := range rep.Cases {
		if r.failed() {
			rep.Failed++
			status = 1
		}
	}
	if stream {
		keep(writeBenchSummary(stdout, rep))
	} else {
		keep(writeBench(stdout, rep))
	}
	if err := errors.Join(outErr, writeFiles(f, rep)); err != nil {
		fmt.Fprintf(stderr, "stridebench: %v\n", err)
		status = 1
	}
	if rep.Failed > 0 {
		fmt.Fprintf(stderr, "stridebench: %d of %d cases failed\n", rep.Failed, len(rep.Cases))
	}
	return status
}

// writeFiles writes the files the flags ask for.
func writeFiles(f *runFlags, rep *report) error {
	var errs []error
	toFile := func(flagName, path string, write func(io.Writer, *report) error) {
		if path == "" {
			return
		}
		fh, err := os.Create(path)
		if err == nil {
			err = write(fh, rep)
			if cerr := fh.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("-%s: %w", flagName, err))
		}
	}
	toFile("json", f.jsonPath, writeJSON)
	toFile("md", f.mdPath, writeMarkdown)
	if f.chartPath != "" {
		if err := writeChart(f.chartPath, rep); err != nil {
			errs = append(errs, fmt.Errorf("-chart: %w", err))
		}
	}
	return errors.Join(errs...)
}

// hostMemory returns the machine's physical memory in bytes, 0 when it is
// not known; tests replace it.
var hostMemory = func() int64 { return int64(min(meminfo.Total(), 1<<62)) }

// hostBytes is about the host memory a case takes: the copies the check
// keeps (the source array, the reference destination and a window of the
// result), plus the arrays themselves when the copy runs on the host.
func hostBytes(b *built, device string) int64 {
	n := b.SrcBytes + b.DstBytes + min(b.DstBytes, 64<<20)
	if device == "cpu" {
		n += max(b.SrcBytes, b.Moved) + b.DstBytes
	}
	return n
}

// limitHostMemory marks the cases whose host buffers would take more than
// half of mem (the physical memory; 0: unknown, no limit) as failed before
// anything is allocated for them.
func limitHostMemory(ps []prepared, device string, mem int64) {
	if mem <= 0 {
		return
	}
	for i, p := range ps {
		if p.Err != nil || p.Built == nil || p.Built.SrcBytes+p.Built.DstBytes > maxArrayBytes {
			continue // refused already, or by the size check
		}
		if n := hostBytes(p.Built, device); n > mem/2 {
			ps[i].Err = fmt.Errorf("%w: %s: its host buffers take %s with -device %s, more than half of this machine's %s of memory", errCase, p.Case.where(), humanSize(n), device, humanSize(mem))
		}
	}
}

// flagRange is an integer flag's value and the range it must lie in.
type flagRange struct {
	name        string
	v, min, max int
}

// check returns a usage error naming the flag and its value when the value
// is outside its range.
func (r flagRange) check() error {
	if r.v < r.min || r.v > r.max {
		return usageErr("%s %d: must be in %d..%d", r.name, r.v, r.min, r.max)
	}
	return nil
}
