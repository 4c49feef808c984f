package nccl

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"unsafe"

	"github.com/ebitengine/purego"
)

// fakeSource is a fake NCCL: the entry points this package binds, with the
// signatures of nccl.h (2.28), compiled by the host C compiler. So the
// tests that load it check, on a machine without a GPU, what the GPU tests
// cannot isolate: that the unique id passed by value, the ranks and the
// ncclConfig_t reach C as C sees them (the id's bytes, the config's fields
// at the header's offsets), and how Comm polls, times out, aborts and
// destroys. Knobs (fake_set) say how the next init and group behave:
// settle after N polls of ncclCommGetAsyncError (N < 0: never, until
// ncclCommAbort or K_RELEASE), with which result. FAKE_OLD builds an NCCL
// 2.13 without ncclCommInitRankConfig and ncclGetLastError; FAKE_NO_SEND one
// without ncclSend.
const fakeSource = `
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <limits.h>
#include <unistd.h>

typedef struct { char internal[128]; } ncclUniqueId;
typedef struct ncclConfig_v22800 {
  size_t size;
  unsigned int magic;
  unsigned int version;
  int blocking;
  int cgaClusterSize;
  int minCTAs;
  int maxCTAs;
  const char *netName;
  int splitShare;
  int trafficClass;
  const char *commName;
  int collnetEnable;
  int CTAPolicy;
  int shrinkShare;
  int nvlsCTAs;
  int nChannelsPerNetPeer;
  int nvlinkCentricSched;
} ncclConfig_t;

struct fakeComm { int nranks, rank, blocking, state, target, aborted; long polls; };
typedef struct fakeComm *ncclComm_t;

enum { K_INIT_POLLS, K_INIT_RESULT, K_GROUP_POLLS, K_GROUP_RESULT, K_SEND_FAIL_PEER,
       K_RELEASE, K_ABORTS, K_DESTROYS, K_POLLS, K_NRANKS, K_RANK, K_ID_OK, K_CFG_OK,
       K_CFG_SIZE, K_CFG_VERSION, K_CFG_BLOCKING, K_DEPTH, K_NLOG, K_INITS, K_NKNOBS };
static long knobs[K_NKNOBS];
static long get(int k) { return __atomic_load_n(&knobs[k], __ATOMIC_SEQ_CST); }
static void set(int k, long v) { __atomic_store_n(&knobs[k], v, __ATOMIC_SEQ_CST); }
static void add(int k, long v) { __atomic_add_fetch(&knobs[k], v, __ATOMIC_SEQ_CST); }
long fake_get(long k) { return get(k); }
void fake_set(long k, long v) { set(k, v); }

struct rec { long op, buf, count, dtype, peer, comm, stream; };
static struct rec logv[64];
static void logop(long op, const void *buf, size_t count, int dtype, int peer, ncclComm_t c, void *stream) {
  long i = get(K_NLOG);
  if (i >= 64) return;
  struct rec r = { op, (long)buf, (long)count, dtype, peer, (long)c, (long)stream };
  logv[i] = r;
  set(K_NLOG, i + 1);
}
long fake_log(long i, struct rec *out) {
  if (i < 0 || i >= get(K_NLOG)) return 0;
  *out = logv[i];
  return 1;
}
void fake_reset(void) {
  for (int k = 0; k < K_NKNOBS; k++) set(k, 0);
  set(K_SEND_FAIL_PEER, -1);
}

#ifdef FAKE_OLD
#define FAKE_VERSION 21304
#else
#define FAKE_VERSION 22805
#endif
int ncclGetVersion(int *v) { *v = FAKE_VERSION; return 0; }
int ncclGetUniqueId(ncclUniqueId *id) {
  for (int i = 0; i < 128; i++) id->internal[i] = (char)(i * 7 + 3);
  return 0;
}
const char *ncclGetErrorString(int r) {
  switch (r) {
  case 2: return "fake system error";
  case 4: return "fake invalid argument";
  case 6: return "fake remote error";
  }
  return "fake error";
}
#ifndef FAKE_OLD
const char *ncclGetLastError(ncclComm_t c) { return "fake last error"; }
#endif

static void wait_release(ncclComm_t c) {
  while (!get(K_RELEASE) && !(c && __atomic_load_n(&c->aborted, __ATOMIC_SEQ_CST))) usleep(1000);
}
static ncclComm_t newComm(int nranks, ncclUniqueId id, int rank, int blocking) {
  int ok = 1;
  for (int i = 0; i < 128; i++) ok &= id.internal[i] == (char)(i * 7 + 3);
  set(K_ID_OK, ok); set(K_NRANKS, nranks); set(K_RANK, rank); add(K_INITS, 1);
  ncclComm_t c = calloc(1, sizeof *c);
  c->nranks = nranks; c->rank = rank; c->blocking = blocking;
  return c;
}
static void pend(ncclComm_t c, long polls, int target) {
  c->polls = polls; c->target = target; c->state = polls == 0 ? target : 7;
}
static int block(ncclComm_t c, long polls, int result) {
  if (polls < 0) wait_release(c);
  if (c) c->state = result;
  return result;
}

#ifndef FAKE_OLD
int ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank, ncclConfig_t *cfg) {
  int ok = cfg->magic == 0xcafebeef && cfg->cgaClusterSize == INT_MIN && cfg->minCTAs == INT_MIN &&
    cfg->maxCTAs == INT_MIN && cfg->netName == NULL && cfg->splitShare == INT_MIN &&
    cfg->trafficClass == INT_MIN && cfg->commName == NULL && cfg->collnetEnable == INT_MIN &&
    cfg->CTAPolicy == INT_MIN && cfg->shrinkShare == INT_MIN && cfg->nvlsCTAs == INT_MIN &&
    cfg->nChannelsPerNetPeer == INT_MIN && cfg->nvlinkCentricSched == INT_MIN;
  set(K_CFG_OK, ok); set(K_CFG_SIZE, (long)cfg->size); set(K_CFG_VERSION, cfg->version);
  set(K_CFG_BLOCKING, cfg->blocking);
  ncclComm_t c = newComm(nranks, id, rank, cfg->blocking == 1);
  *comm = c;
  if (c->blocking) return block(c, get(K_INIT_POLLS), (int)get(K_INIT_RESULT));
  pend(c, get(K_INIT_POLLS), (int)get(K_INIT_RESULT));
  return 7;
}
#endif
int ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank) {
  ncclComm_t c = newComm(nranks, id, rank, 1);
  int r = block(NULL, get(K_INIT_POLLS), (int)get(K_INIT_RESULT));
  *comm = c;
  return r;
}
int ncclCommGetAsyncError(ncclComm_t c, int *st) {
  add(K_POLLS, 1);
  if (c->state == 7 && c->polls > 0 && --c->polls == 0) c->state = c->target;
  *st = c->state;
  return 0;
}
int ncclCommAbort(ncclComm_t c) {
  __atomic_store_n(&c->aborted, 1, __ATOMIC_SEQ_CST);
  add(K_ABORTS, 1);
  return 0;
}
int ncclCommDestroy(ncclComm_t c) { add(K_DESTROYS, 1); return 0; }

static ncclComm_t groupComm;
int ncclGroupStart(void) { add(K_DEPTH, 1); logop(1, 0, 0, 0, 0, 0, 0); return 0; }
#ifndef FAKE_NO_SEND
int ncclSend(const void *buf, size_t count, int dtype, int peer, ncclComm_t c, void *stream) {
  logop(3, buf, count, dtype, peer, c, stream);
  groupComm = c;
  return peer == get(K_SEND_FAIL_PEER) ? 4 : 0;
}
#endif
int ncclRecv(void *buf, size_t count, int dtype, int peer, ncclComm_t c, void *stream) {
  logop(4, buf, count, dtype, peer, c, stream);
  groupComm = c;
  return 0;
}
int ncclGroupEnd(void) {
  add(K_DEPTH, -1);
  logop(2, 0, 0, 0, 0, 0, 0);
  ncclComm_t c = groupComm;
  groupComm = NULL;
  if (!c) return 0;
  if (c->blocking) return block(c, get(K_GROUP_POLLS), (int)get(K_GROUP_RESULT));
  pend(c, get(K_GROUP_POLLS), (int)get(K_GROUP_RESULT));
  return 7;
}
`

// Knobs of the fake (its enum).
const (
	kInitPolls = iota
	kInitResult
	kGroupPolls
	kGroupResult
	kSendFailPeer
	kRelease
	kAborts
	kDestroys
	kPolls
	kNRanks
	kRank
	kIDOK
	kCfgOK
	kCfgSize
	kCfgVersion
	kCfgBlocking
	kDepth
	kNLog
	kInits
)

// fakeRec is one logged call of the fake: op 1 ncclGroupStart, 2
// ncclGroupEnd, 3 ncclSend, 4 ncclRecv.
type fakeRec struct{ op, buf, count, dtype, peer, comm, stream int64 }

// fakeNCCL is a loaded fake and its test entry points.
type fakeNCCL struct {
	lib                   *library
	get, set, reset, logf uintptr
}

func (f *fakeNCCL) knob(k int) int64 {
	r, _, _ := purego.SyscallN(f.get, uintptr(k))
	return int64(r)
}

func (f *fakeNCCL) setKnob(k int, v int64) { purego.SyscallN(f.set, uintptr(k), uintptr(v)) }

// log returns the calls logged since the last reset.
func (f *fakeNCCL) log() []fakeRec {
	var recs []fakeRec
	for i := 0; ; i++ {
		r := new(fakeRec)
		ok, _, _ := purego.SyscallN(f.logf, uintptr(i), uintptr(unsafe.Pointer(r)))
		if ok == 0 {
			return recs
		}
		recs = append(recs, *r)
	}
}

var fakes struct {
	mu   sync.Mutex
	dir  string
	libs map[string]*fakeNCCL
	errs map[string]error
}

// fakeDir is the directory the fakes are built in, removed by TestMain.
func fakeDir() (string, error) {
	if fakes.dir == "" {
		d, err := os.MkdirTemp("", "stridekit-fakenccl-")
		if err != nil {
			return "", err
		}
		fakes.dir = d
	}
	return fakes.dir, nil
}

// buildFake compiles the fake with the given -D flags into a shared
// library and returns its path.
func buildFake(name string, defines ...string) (string, error) {
	cc, err := exec.LookPath("cc")
	if err != nil {
		return "", err
	}
	dir, err := fakeDir()
	if err != nil {
		return "", err
	}
	src := filepath.Join(dir, name+".c")
	if err := os.WriteFile(src, []byte(fakeSource), 0o600); err != nil {
		return "", err
	}
	so := filepath.Join(dir, "lib"+name+".so")
	args := append([]string{"-shared", "-fPIC", "-O1", "-o", so, src}, defines...)
	if out, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
		return "", &exec.Error{Name: cc, Err: errorString(string(out))}
	}
	return so, nil
}

type errorString string

func (e errorString) Error() string { return string(e) }

// loadFake returns the fake built with defines (loaded once per process),
// reset; it skips tb where there is no C compiler.
func loadFake(tb testing.TB, defines ...string) *fakeNCCL {
	tb.Helper()
	name := "fakenccl"
	for _, d := range defines {
		name += "_" + d[2:]
	}
	fakes.mu.Lock()
	defer fakes.mu.Unlock()
	if fakes.libs == nil {
		fakes.libs, fakes.errs = map[string]*fakeNCCL{}, map[string]error{}
	}
	f, err := fakes.libs[name], fakes.errs[name]
	if f == nil && err == nil {
		f, err = openFake(name, defines)
		fakes.libs[name], fakes.errs[name] = f, err
	}
	if err != nil {
		if _, ok := err.(*exec.Error); ok {
			tb.Skipf("no fake NCCL (needs a C compiler): %.200v", err)
		}
		tb.Fatal(err)
	}
	purego.SyscallN(f.reset)
	return f
}

func openFake(name string, defines []string) (*fakeNCCL, error) {
	so, err := buildFake(name, defines...)
	if err != nil {
		return nil, err
	}
	l, err := openLibrary(so)
	if err != nil {
		return nil, err
	}
	f := &fakeNCCL{lib: l}
	for _, s := range []struct {
		name string
		p    *uintptr
	}{{"fake_get", &f.get}, {"fake_set", &f.set}, {"fake_reset", &f.reset}, {"fake_log", &f.logf}} {
		if *s.p, err = purego.Dlsym(l.handle, s.name); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// direct runs f on the calling goroutine: the fake needs no device.
func direct(f func() error) error { return f() }
