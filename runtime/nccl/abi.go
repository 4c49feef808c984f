package nccl

import (
	"math"
	"structs"
	"unsafe"
)

// ncclConfig is ncclConfig_t as NCCL 2.28's nccl.h declares it (typedef
// struct ncclConfig_v22800), field for field; its C layout is fixed by
// structs.HostLayout, and config_test.go checks its size and offsets
// against a table written from the header.
//
// NCCL reads a config defensively: it copies min(config.size,
// sizeof(its own ncclConfig_t)) bytes over a default-initialised one, and
// resets every field newer than config.version to its default. So this
// layout, with version 2.28.0, is read correctly by every NCCL from 2.14
// (which introduced configs, with that copy) on: an older one reads the
// prefix it knows, a newer one (2.29 added graphUsageMode, numRmaCtx, …)
// reads ours and ignores the fields it has beyond it.
type ncclConfig struct {
	_                   structs.HostLayout
	size                uintptr // size_t size
	magic               uint32  // unsigned int magic
	version             uint32  // unsigned int version
	blocking            int32
	cgaClusterSize      int32
	minCTAs             int32
	maxCTAs             int32
	netName             uintptr // const char *
	splitShare          int32
	trafficClass        int32
	commName            uintptr // const char *
	collnetEnable       int32
	ctaPolicy           int32
	shrinkShare         int32
	nvlsCTAs            int32
	nChannelsPerNetPeer int32
	nvlinkCentricSched  int32
}

const (
	configMagic   = 0xcafebeef    // NCCL_CONFIG_INITIALIZER's magic
	configVersion = 22800         // NCCL_VERSION(2, 28, 0): the layout of ncclConfig
	undefInt      = math.MinInt32 // NCCL_CONFIG_UNDEF_INT (INT_MIN)

	// minConfigVersion is NCCL 2.14.0, the first with
	// ncclCommInitRankConfig and non-blocking communicators.
	minConfigVersion = 21400
	// maxConfigVersion bounds the versions trusted to read ncclConfig as
	// 2.x does: a major version 3 may change the rules.
	maxConfigVersion = 30000

	ncclUint8 = 1 // ncclDataType_t
)

// newConfig returns NCCL_CONFIG_INITIALIZER of the 2.28 layout, with
// blocking set (1) or cleared (0): every other int field
// NCCL_CONFIG_UNDEF_INT and every pointer NULL, so NCCL picks its defaults
// (or its NCCL_* environment variables) for them.
func newConfig(blocking bool) *ncclConfig {
	c := &ncclConfig{
		size:    unsafe.Sizeof(ncclConfig{}),
		magic:   configMagic,
		version: configVersion,
	}
	for _, p := range []*int32{&c.blocking, &c.cgaClusterSize, &c.minCTAs, &c.maxCTAs, &c.splitShare,
		&c.trafficClass, &c.collnetEnable, &c.ctaPolicy, &c.shrinkShare, &c.nvlsCTAs,
		&c.nChannelsPerNetPeer, &c.nvlinkCentricSched} {
		*p = undefInt
	}
	c.blocking = 0
	if blocking {
		c.blocking = 1
	}
	return c
}

// configUsable reports whether l has ncclCommInitRankConfig and is a
// version that reads ncclConfig as described there. Otherwise NewComm
// falls back on ncclCommInitRank, which makes a blocking communicator.
func (l *library) configUsable() bool {
	return l.commInitRankConfig != 0 && l.version >= minConfigVersion && l.version < maxConfigVersion
}

// initRank calls ncclCommInitRankConfig (cfg not nil) or ncclCommInitRank
// on the calling thread, whose current device becomes the communicator's.
// It returns the handle NCCL stored (possibly set even with a code of
// ncclInProgress, for a non-blocking communicator) and the ncclResult_t.
// The unique id is passed by value as callInit lays it out for this
// platform, from a copy the callee may write.
func (l *library) initRank(nranks, rank int, id UniqueID, cfg *ncclConfig) (h uintptr, code int) {
	comm, idc := new(uintptr), new(UniqueID)
	*idc = id
	fn := l.commInitRank
	if cfg != nil {
		fn = l.commInitRankConfig
	}
	r := callInit(fn, comm, nranks, rank, idc, cfg)
	return *comm, int(int32(r))
}
