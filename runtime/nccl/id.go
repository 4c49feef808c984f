package nccl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"
	"unsafe"

	"github.com/ebitengine/purego"
)

// UniqueID is NCCL's ncclUniqueId (NCCL_UNIQUE_ID_BYTES = 128 bytes): the
// name of a communicator to be, made by one rank (NewUniqueID) and handed
// to all the others before they call NewComm. It holds the address rank 0's
// NCCL listens on for the others, so it is good for one communicator, made
// while that process lives.
type UniqueID [128]byte

// NewUniqueID makes a new unique id (ncclGetUniqueId). Only one rank, the
// one that publishes it (rank 0 in Bootstrap), calls it.
func NewUniqueID() (UniqueID, error) {
	l, err := loaded()
	if err != nil {
		return UniqueID{}, err
	}
	return l.newUniqueID()
}

func (l *library) newUniqueID() (UniqueID, error) {
	id := new(UniqueID)
	r, _, _ := purego.SyscallN(l.getUniqueID, uintptr(unsafe.Pointer(id)))
	return *id, l.check("ncclGetUniqueId", r, 0)
}

// idMagic starts every id this package writes or sends: a file or a peer
// of anything else is recognised as such (ErrBadID), never read as an id.
const idMagic = "SKNCCLv1"

// idRecordLen is the length of an id record: idMagic and the id.
const idRecordLen = len(idMagic) + len(UniqueID{})

func encodeID(id UniqueID) []byte {
	return append([]byte(idMagic), id[:]...)
}

func decodeID(b []byte, from string) (UniqueID, error) {
	var id UniqueID
	if len(b) != idRecordLen || !bytes.HasPrefix(b, []byte(idMagic)) {
		return id, fmt.Errorf("%w: %s: %d bytes, want %d starting %q", ErrBadID, from, len(b), idRecordLen, idMagic)
	}
	copy(id[:], b[len(idMagic):])
	return id, nil
}

// PublishFile writes id to the file path, atomically: into a temporary file
// of the same directory, synced, then renamed to path, so a reader
// (ReadFile) sees no file or the whole id, never part of it. An existing
// file is replaced. The file is readable by its owner only. Use a path no
// earlier run left an id at (one per job), or remove it first: a rank that
// reads an old id waits in NewComm for a communicator that never forms,
// until its context ends.
func PublishFile(path string, id UniqueID) error {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return fmt.Errorf("nccl: PublishFile %s: %w", path, err)
	}
	tmp := f.Name()
	_, err = f.Write(encodeID(id))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("nccl: PublishFile %s: %w", path, err)
	}
	return nil
}

// ReadFile reads the id PublishFile wrote to path, waiting for the file to
// appear (polling, from a few milliseconds apart to a quarter second) until
// ctx ends: then the error wraps ErrTimeout and ctx's error. A file that is
// there but not an id PublishFile wrote is an ErrBadID error; one that
// cannot be read, the reason. A nil ctx never ends.
func ReadFile(ctx context.Context, path string) (UniqueID, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	for i := 0; ; i++ {
		b, err := os.ReadFile(path)
		if err == nil {
			return decodeID(b, path)
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return UniqueID{}, fmt.Errorf("nccl: ReadFile: %w", err)
		}
		if err := sleep(ctx, backoff(i, 5*time.Millisecond, 250*time.Millisecond)); err != nil {
			return UniqueID{}, fmt.Errorf("%w: no unique id at %s when the context ended: %w", ErrTimeout, path, err)
		}
	}
}

// backoff returns the wait before try i+1: first, doubling to at most
// most.
func backoff(i int, first, most time.Duration) time.Duration {
	return min(first<<min(i, 20), most)
}

// sleep waits d, or until ctx ends (then it returns ctx's error).
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// connTimeout bounds one connection of ServeID or FetchID (within ctx):
// the exchange is a few hundred bytes, so a peer that takes longer is not
// a peer of ours.
const connTimeout = 10 * time.Second

// ServeID listens on the TCP address addr ("host:port", or ":port" for
// every interface) and hands id to n fetchers (FetchID), returning once n
// have confirmed they got it, or with an error wrapping ErrTimeout and
// ctx's error (and saying how many had) when ctx ends first. A connection
// that does not confirm (a port scanner, a fetcher that died) is not
// counted. n = 0 returns at once. Rank 0 of a group of size ranks serves
// size-1 fetchers. A nil ctx never ends.
func ServeID(ctx context.Context, addr string, id UniqueID, n int) error {
	if n <= 0 {
		return nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("nccl: ServeID: %w", err)
	}
	return ServeIDListener(ctx, ln, id, n)
}

// ServeIDListener is ServeID on a listener the caller opened (":0" for a
// port of the system's choosing, say, whose address ln.Addr() gives). It
// closes ln before it returns.
func ServeIDListener(ctx context.Context, ln net.Listener, id UniqueID, n int) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if n <= 0 {
		return ln.Close()
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait() // last: the accept loop and the connections have ended
	defer cancel()  // closes ln and every connection still open
	context.AfterFunc(ctx, func() { ln.Close() })
	acked := make(chan struct{}, n)
	accepted := make(chan error, 1)
	wg.Add(1) // held by the accept loop, so its own Adds never start from 0
	go func() {
		defer wg.Done()
		accepted <- acceptLoop(ctx, ln, encodeID(id), acked, &wg)
	}()
	for got := 0; got < n; {
		select {
		case <-acked:
			got++
		case <-ctx.Done():
			return fmt.Errorf("%w: %d of %d fetchers got the unique id from %v when the context ended: %w", ErrTimeout, got, n, ln.Addr(), ctx.Err())
		case err := <-accepted:
			if ctx.Err() == nil {
				return fmt.Errorf("nccl: ServeID on %v: %w", ln.Addr(), err)
			}
		}
	}
	return nil
}

// acceptLoop accepts connections until ln closes, serving each (serveConn)
// on a goroutine of wg that reports a confirmed fetch on acked.
func acceptLoop(ctx context.Context, ln net.Listener, rec []byte, acked chan<- struct{}, wg *sync.WaitGroup) error {
	for {
		conn, err := ln.Accept()
		if err != nil {
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if serveConn(ctx, conn, rec) == nil {
				select {
				case acked <- struct{}{}:
				default: // more confirmations than fetchers wanted
				}
			}
		}()
	}
}

// serveConn writes the id record to conn and reads the fetcher's one-byte
// confirmation.
func serveConn(ctx context.Context, conn net.Conn, rec []byte) error {
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	conn.SetDeadline(time.Now().Add(connTimeout))
	if _, err := conn.Write(rec); err != nil {
		return err
	}
	var ack [1]byte
	if _, err := io.ReadFull(conn, ack[:]); err != nil {
		return err
	}
	if ack[0] != '+' {
		return fmt.Errorf("confirmation %q", ack[0])
	}
	return nil
}

// FetchID fetches the id ServeID serves at the TCP address addr
// ("host:port"; ":port" is this host), retrying (from 10 ms apart to half
// a second) while nobody listens there yet, until ctx ends: then the
// error wraps ErrTimeout and ctx's error, and gives the last reason. A
// server that sends anything but an id record is an ErrBadID error. A nil
// ctx never ends.
func FetchID(ctx context.Context, addr string) (UniqueID, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	var d net.Dialer
	for i := 0; ; i++ {
		id, err := fetchOnce(ctx, &d, addr)
		if err == nil || errors.Is(err, ErrBadID) {
			return id, err
		}
		if serr := sleep(ctx, backoff(i, 10*time.Millisecond, 500*time.Millisecond)); serr != nil {
			return UniqueID{}, fmt.Errorf("%w: no unique id from %s when the context ended (last try: %v): %w", ErrTimeout, addr, err, serr)
		}
	}
}

// fetchOnce makes one try of FetchID: connect, read the record, confirm.
func fetchOnce(ctx context.Context, d *net.Dialer, addr string) (UniqueID, error) {
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return UniqueID{}, err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	conn.SetDeadline(time.Now().Add(connTimeout))
	b := make([]byte, idRecordLen)
	n, err := io.ReadFull(conn, b)
	if n >= len(idMagic) && string(b[:len(idMagic)]) != idMagic {
		return UniqueID{}, fmt.Errorf("%w: %s does not serve a unique id (it sent %q)", ErrBadID, addr, b[:len(idMagic)])
	}
	if err != nil {
		return UniqueID{}, fmt.Errorf("reading from %s: %w", addr, err)
	}
	id, err := decodeID(b, addr)
	if err != nil {
		return id, err
	}
	if _, err := conn.Write([]byte{'+'}); err != nil {
		return UniqueID{}, fmt.Errorf("confirming to %s: %w", addr, err)
	}
	return id, nil
}

// Environment variables ConfigFromEnv reads.
const (
	EnvRank      = "STRIDEKIT_RANK"         // this process's rank (else RANK, as torchrun sets it)
	EnvSize      = "STRIDEKIT_WORLD_SIZE"   // the number of ranks (else WORLD_SIZE)
	EnvLocalRank = "STRIDEKIT_LOCAL_RANK"   // the device ordinal (else LOCAL_RANK, else the rank)
	EnvIDAddr    = "STRIDEKIT_NCCL_ID_ADDR" // host:port rank 0 serves the unique id on
	EnvIDFile    = "STRIDEKIT_NCCL_ID_FILE" // file rank 0 publishes the unique id in
)

// Config says how Bootstrap hands the unique id from rank 0 to the others:
// through a TCP address (Addr) or a file on storage every rank sees (File),
// exactly one of them when Size > 1.
type Config struct {
	Rank, Size int
	// Device is the ordinal of the device the rank uses (not read by
	// Bootstrap; ConfigFromEnv fills it in for NewComm's caller).
	Device int
	// Addr is "host:port": rank 0 listens there (ServeID), the others
	// connect (FetchID). host must be an address of rank 0's machine, or
	// empty (":port": every interface, and this machine for the others).
	Addr string
	// File is a path: rank 0 writes the id there (PublishFile), the
	// others wait for it (ReadFile). Use a new path for every job.
	File string
}

// ConfigFromEnv returns the Config the environment describes: Rank from
// STRIDEKIT_RANK, else RANK (torchrun's), else 0; Size from
// STRIDEKIT_WORLD_SIZE, else WORLD_SIZE, else 1; Device from
// STRIDEKIT_LOCAL_RANK, else LOCAL_RANK, else the rank; Addr from
// STRIDEKIT_NCCL_ID_ADDR and File from STRIDEKIT_NCCL_ID_FILE. A value that
// is not a number is an ErrConfig error naming the variable; the Config
// is checked by Bootstrap, not here.
func ConfigFromEnv() (Config, error) { return configFrom(os.Getenv) }

func configFrom(getenv func(string) string) (Config, error) {
	c := Config{Size: 1, Addr: getenv(EnvIDAddr), File: getenv(EnvIDFile)}
	for _, v := range []struct {
		names []string
		dst   *int
	}{
		{[]string{EnvRank, "RANK"}, &c.Rank},
		{[]string{EnvSize, "WORLD_SIZE"}, &c.Size},
		{[]string{EnvLocalRank, "LOCAL_RANK", EnvRank, "RANK"}, &c.Device},
	} {
		for _, name := range v.names {
			s := getenv(name)
			if s == "" {
				continue
			}
			n, err := strconv.Atoi(s)
			if err != nil {
				return Config{}, fmt.Errorf("%w: %s=%q is not a number", ErrConfig, name, s)
			}
			*v.dst = n
			break
		}
	}
	return c, nil
}

// check reports whether the config can work.
func (c Config) check() error {
	if err := checkRank(c.Size, c.Rank); err != nil {
		return err
	}
	if c.Size == 1 {
		return nil
	}
	switch {
	case c.Addr == "" && c.File == "":
		return fmt.Errorf("%w: %d ranks and no way to hand out the unique id: set Addr (%s) or File (%s)", ErrConfig, c.Size, EnvIDAddr, EnvIDFile)
	case c.Addr != "" && c.File != "":
		return fmt.Errorf("%w: both Addr %q and File %q: set one", ErrConfig, c.Addr, c.File)
	}
	return nil
}

// Bootstrap hands the communicator's unique id from rank 0 to every rank,
// as torchrun's rendezvous does, and returns it for NewComm: rank 0 makes
// it (NewUniqueID) and publishes it, through cfg.File (PublishFile) or by
// serving it on cfg.Addr to the Size-1 others (ServeID, which returns once
// they all have it); every other rank reads it (ReadFile) or fetches it
// (FetchID), waiting for rank 0. A group of one rank needs neither. ctx
// bounds every wait: at its end the error wraps ErrTimeout and ctx's
// error. A bad cfg is an ErrRank or ErrConfig error.
func Bootstrap(ctx context.Context, cfg Config) (UniqueID, error) {
	return bootstrap(ctx, cfg, NewUniqueID)
}

// bootstrap is Bootstrap with the id made by newID (tests make one
// without NCCL).
func bootstrap(ctx context.Context, cfg Config, newID func() (UniqueID, error)) (UniqueID, error) {
	if err := cfg.check(); err != nil {
		return UniqueID{}, err
	}
	if cfg.Rank != 0 {
		if cfg.File != "" {
			return ReadFile(ctx, cfg.File)
		}
		return FetchID(ctx, cfg.Addr)
	}
	id, err := newID()
	if err != nil || cfg.Size == 1 {
		return id, err
	}
	if cfg.File != "" {
		return id, PublishFile(cfg.File, id)
	}
	return id, ServeID(ctx, cfg.Addr, id, cfg.Size-1)
}
