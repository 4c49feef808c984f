package nccl

import (
	"math"
	"testing"
	"unsafe"
)

// TestConfigLayout checks the Go ncclConfig against ncclConfig_t of NCCL
// 2.28's src/nccl.h.in (typedef struct ncclConfig_v22800), on LP64: each
// field's offset as C lays out that header's fields in order (size_t and
// pointers 8 bytes, int and unsigned int 4, each at its alignment), and the
// size, a multiple of 8. The fake NCCL's tests check the same layout with
// the C compiler's own view (TestFakeInit: kCfgOK, kCfgSize).
func TestConfigLayout(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("the table is for 64-bit platforms")
	}
	var c ncclConfig
	for _, f := range []struct {
		name        string
		off, size   uintptr
		gotOff, got uintptr
	}{
		{"size", 0, 8, unsafe.Offsetof(c.size), unsafe.Sizeof(c.size)},
		{"magic", 8, 4, unsafe.Offsetof(c.magic), unsafe.Sizeof(c.magic)},
		{"version", 12, 4, unsafe.Offsetof(c.version), unsafe.Sizeof(c.version)},
		{"blocking", 16, 4, unsafe.Offsetof(c.blocking), unsafe.Sizeof(c.blocking)},
		{"cgaClusterSize", 20, 4, unsafe.Offsetof(c.cgaClusterSize), unsafe.Sizeof(c.cgaClusterSize)},
		{"minCTAs", 24, 4, unsafe.Offsetof(c.minCTAs), unsafe.Sizeof(c.minCTAs)},
		{"maxCTAs", 28, 4, unsafe.Offsetof(c.maxCTAs), unsafe.Sizeof(c.maxCTAs)},
		{"netName", 32, 8, unsafe.Offsetof(c.netName), unsafe.Sizeof(c.netName)},
		{"splitShare", 40, 4, unsafe.Offsetof(c.splitShare), unsafe.Sizeof(c.splitShare)},
		{"trafficClass", 44, 4, unsafe.Offsetof(c.trafficClass), unsafe.Sizeof(c.trafficClass)},
		{"commName", 48, 8, unsafe.Offsetof(c.commName), unsafe.Sizeof(c.commName)},
		{"collnetEnable", 56, 4, unsafe.Offsetof(c.collnetEnable), unsafe.Sizeof(c.collnetEnable)},
		{"CTAPolicy", 60, 4, unsafe.Offsetof(c.ctaPolicy), unsafe.Sizeof(c.ctaPolicy)},
		{"shrinkShare", 64, 4, unsafe.Offsetof(c.shrinkShare), unsafe.Sizeof(c.shrinkShare)},
		{"nvlsCTAs", 68, 4, unsafe.Offsetof(c.nvlsCTAs), unsafe.Sizeof(c.nvlsCTAs)},
		{"nChannelsPerNetPeer", 72, 4, unsafe.Offsetof(c.nChannelsPerNetPeer), unsafe.Sizeof(c.nChannelsPerNetPeer)},
		{"nvlinkCentricSched", 76, 4, unsafe.Offsetof(c.nvlinkCentricSched), unsafe.Sizeof(c.nvlinkCentricSched)},
	} {
		if f.gotOff != f.off || f.got != f.size {
			t.Errorf("%s at %d (%d bytes), want %d (%d bytes)", f.name, f.gotOff, f.got, f.off, f.size)
		}
	}
	if s := unsafe.Sizeof(c); s != 80 {
		t.Errorf("sizeof = %d, want 80", s)
	}
}

// TestNewConfig checks NCCL_CONFIG_INITIALIZER's values.
func TestNewConfig(t *testing.T) {
	for _, blocking := range []bool{false, true} {
		c := newConfig(blocking)
		want := int32(0)
		if blocking {
			want = 1
		}
		if c.size != unsafe.Sizeof(*c) || c.magic != 0xcafebeef || c.version != 22800 || c.blocking != want {
			t.Errorf("blocking %v: size %d magic %#x version %d blocking %d", blocking, c.size, c.magic, c.version, c.blocking)
		}
		for name, v := range map[string]int32{"cgaClusterSize": c.cgaClusterSize, "minCTAs": c.minCTAs, "maxCTAs": c.maxCTAs,
			"splitShare": c.splitShare, "trafficClass": c.trafficClass, "collnetEnable": c.collnetEnable, "CTAPolicy": c.ctaPolicy,
			"shrinkShare": c.shrinkShare, "nvlsCTAs": c.nvlsCTAs, "nChannelsPerNetPeer": c.nChannelsPerNetPeer,
			"nvlinkCentricSched": c.nvlinkCentricSched} {
			if v != math.MinInt32 {
				t.Errorf("%s = %d, want NCCL_CONFIG_UNDEF_INT", name, v)
			}
		}
		if c.netName != 0 || c.commName != 0 {
			t.Error("pointer fields not NULL")
		}
	}
}

func TestConfigTrusted(t *testing.T) {
	for v, want := range map[int]bool{2804: false, 21304: false, 21400: true, 22805: true, 23007: true, 30000: false} {
		l := &library{version: v, commInitRankConfig: 1}
		if got := l.configUsable(); got != want {
			t.Errorf("version %d: config usable %v, want %v", v, got, want)
		}
	}
	if (&library{version: 22805}).configUsable() {
		t.Error("usable without ncclCommInitRankConfig")
	}
}
