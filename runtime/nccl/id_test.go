package nccl

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stridekit/stridekit/runtime/dist"
)

// testID returns a unique id with every byte set from seed.
func testID(seed byte) UniqueID {
	var id UniqueID
	for i := range id {
		id[i] = seed + byte(i)
	}
	return id
}

func TestFileRoundTrip(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "nccl.id")
	want := testID(7)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	const readers = 4
	got := make([]UniqueID, readers)
	errs := make([]error, readers)
	var wg sync.WaitGroup
	for r := range readers { // waiting before the file is there
		wg.Go(func() { got[r], errs[r] = ReadFile(ctx, path) })
	}
	time.Sleep(30 * time.Millisecond)
	if err := PublishFile(path, want); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for r := range readers {
		if errs[r] != nil || got[r] != want {
			t.Errorf("reader %d: %v, id equal: %v", r, errs[r], got[r] == want)
		}
	}
	late, err := ReadFile(ctx, path) // after it is there
	if err != nil || late != want {
		t.Errorf("late reader: %v", err)
	}
	if err := PublishFile(path, testID(9)); err != nil { // replaced
		t.Fatal(err)
	}
	if id, err := ReadFile(ctx, path); err != nil || id != testID(9) {
		t.Errorf("after replacing: %v", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 1 {
		t.Errorf("directory holds %v (%v), want the id file alone: no temporary files left", entries, err)
	}
}

func TestReadFileTimeout(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := ReadFile(ctx, filepath.Join(t.TempDir(), "never"))
	if !errors.Is(err, ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v; want ErrTimeout wrapping DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("took %v", d)
	}
}

func TestReadFileBad(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad")
	for _, content := range []string{"", "short", string(make([]byte, idRecordLen))} {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadFile(context.Background(), path); !errors.Is(err, ErrBadID) {
			t.Errorf("file of %d bytes: %v, want ErrBadID", len(content), err)
		}
	}
	if _, err := ReadFile(context.Background(), t.TempDir()); err == nil || errors.Is(err, ErrBadID) {
		t.Errorf("a directory: %v, want the read error", err)
	}
	if err := PublishFile(filepath.Join(t.TempDir(), "no", "such", "dir", "id"), testID(1)); err == nil {
		t.Error("PublishFile into a missing directory succeeded")
	}
}

// listen opens a listener on a free loopback port.
func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Skipf("no loopback TCP: %v", err)
	}
	return ln
}

func TestTCPRoundTrip(t *testing.T) {
	ln := listen(t)
	addr := ln.Addr().String()
	want := testID(3)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// A stray connection that never confirms must not count as a fetcher.
	if stray, err := net.Dial("tcp", addr); err == nil {
		defer stray.Close()
	}
	const fetchers = 5
	got := make([]UniqueID, fetchers)
	errs := make([]error, fetchers)
	var wg sync.WaitGroup
	for r := range fetchers {
		wg.Go(func() { got[r], errs[r] = FetchID(ctx, addr) })
	}
	if err := ServeIDListener(ctx, ln, want, fetchers); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for r := range fetchers {
		if errs[r] != nil || got[r] != want {
			t.Errorf("fetcher %d: %v, id equal: %v", r, errs[r], got[r] == want)
		}
	}
}

// TestTCPFetchFirst starts the fetchers before anyone listens: they retry
// until ServeID comes up.
func TestTCPFetchFirst(t *testing.T) {
	ln := listen(t)
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan error, 2)
	for range 2 {
		go func() {
			id, err := FetchID(ctx, addr)
			if err == nil && id != testID(5) {
				err = fmt.Errorf("wrong id")
			}
			done <- err
		}()
	}
	time.Sleep(50 * time.Millisecond)
	if err := ServeID(ctx, addr, testID(5), 2); err != nil {
		t.Skipf("could not listen again on %s: %v", addr, err)
	}
	for range 2 {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

func TestTCPTimeouts(t *testing.T) {
	ln := listen(t)
	addr := ln.Addr().String()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	err := ServeIDListener(ctx, ln, testID(1), 3)
	if !errors.Is(err, ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, dist.ErrTimeout) {
		t.Errorf("ServeID without fetchers: %v, want ErrTimeout", err)
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel2()
	start := time.Now()
	_, err = FetchID(ctx2, addr) // closed by ServeID: nobody listens
	if !errors.Is(err, ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("FetchID without a server: %v, want ErrTimeout", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("FetchID took %v", d)
	}
	if err := ServeID(context.Background(), addr, testID(1), 0); err != nil {
		t.Errorf("ServeID to 0 fetchers: %v", err)
	}
}

func TestFetchFromStranger(t *testing.T) {
	ln := listen(t)
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("HTTP/1.1 400 Bad Request\r\n\r\n"))
			c.Close()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := FetchID(ctx, ln.Addr().String()); !errors.Is(err, ErrBadID) {
		t.Errorf("got %v, want ErrBadID at once", err)
	}
}

func TestBootstrap(t *testing.T) {
	newID := func() (UniqueID, error) { return testID(42), nil }
	for _, size := range []int{1, 2, 4} {
		for _, via := range []string{"file", "tcp"} {
			t.Run(fmt.Sprintf("%s/%d", via, size), func(t *testing.T) {
				cfg := Config{Size: size}
				if via == "file" {
					cfg.File = filepath.Join(t.TempDir(), "id")
				} else {
					ln := listen(t)
					cfg.Addr = ln.Addr().String()
					ln.Close()
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				ids := make([]UniqueID, size)
				errs := make([]error, size)
				var wg sync.WaitGroup
				for r := size - 1; r >= 0; r-- { // rank 0 last
					c := cfg
					c.Rank = r
					wg.Go(func() { ids[r], errs[r] = bootstrap(ctx, c, newID) })
				}
				wg.Wait()
				for r := range size {
					if errs[r] != nil || ids[r] != testID(42) {
						t.Errorf("rank %d: %v", r, errs[r])
					}
				}
			})
		}
	}
}

func TestBootstrapTimeout(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := bootstrap(ctx, Config{Rank: 1, Size: 2, File: filepath.Join(t.TempDir(), "id")}, nil)
	if !errors.Is(err, ErrTimeout) {
		t.Errorf("rank 1 with no rank 0: %v, want ErrTimeout", err)
	}
	failing := func() (UniqueID, error) { return UniqueID{}, ErrNoNCCL }
	if _, err := bootstrap(ctx, Config{Size: 2, File: "x"}, failing); !errors.Is(err, ErrNoNCCL) {
		t.Errorf("rank 0 without NCCL: %v", err)
	}
}

func TestBootstrapConfig(t *testing.T) {
	for _, tt := range []struct {
		cfg  Config
		want error
	}{
		{Config{Size: 0}, ErrRank},
		{Config{Rank: 2, Size: 2, File: "f"}, ErrRank},
		{Config{Rank: -1, Size: 2, File: "f"}, ErrRank},
		{Config{Size: 2}, ErrConfig},
		{Config{Size: 2, File: "f", Addr: ":1"}, ErrConfig},
	} {
		if _, err := bootstrap(context.Background(), tt.cfg, nil); !errors.Is(err, tt.want) {
			t.Errorf("%+v: %v, want %v", tt.cfg, err, tt.want)
		}
	}
	if !errors.Is(ErrRank, dist.ErrRank) {
		t.Error("ErrRank does not match dist.ErrRank")
	}
}

func TestConfigFromEnv(t *testing.T) {
	for _, tt := range []struct {
		env  map[string]string
		want Config
		err  error
	}{
		{nil, Config{Size: 1}, nil},
		{map[string]string{"RANK": "3", "WORLD_SIZE": "8", "LOCAL_RANK": "1"}, Config{Rank: 3, Size: 8, Device: 1}, nil},
		{map[string]string{"RANK": "3", "WORLD_SIZE": "8"}, Config{Rank: 3, Size: 8, Device: 3}, nil},
		{map[string]string{EnvRank: "2", "RANK": "5", EnvSize: "4", "WORLD_SIZE": "9", EnvLocalRank: "0", "LOCAL_RANK": "7",
			EnvIDAddr: "node0:29600", EnvIDFile: "/shared/id"},
			Config{Rank: 2, Size: 4, Device: 0, Addr: "node0:29600", File: "/shared/id"}, nil},
		{map[string]string{EnvRank: "two"}, Config{}, ErrConfig},
		{map[string]string{"WORLD_SIZE": "8x"}, Config{}, ErrConfig},
	} {
		got, err := configFrom(func(k string) string { return tt.env[k] })
		if got != tt.want || !errors.Is(err, tt.err) || (tt.err == nil) != (err == nil) {
			t.Errorf("%v: %+v, %v; want %+v, %v", tt.env, got, err, tt.want, tt.err)
		}
	}
}
