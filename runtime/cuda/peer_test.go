package cuda

import (
	"bytes"
	"errors"
	"testing"
)

// TestPeerArgs: the peer calls refuse nil and zero devices with an error
// naming the method, before calling the driver.
func TestPeerArgs(t *testing.T) {
	var zero Device
	if _, err := (*Device)(nil).CanAccessPeer(&zero); err == nil {
		t.Error("nil.CanAccessPeer: no error")
	}
	if err := zero.EnablePeerAccess(nil); err == nil {
		t.Error("zero.EnablePeerAccess(nil): no error")
	}
	if err := zero.MemcpyPeerAsync(0, 0, nil, 1, nil); err == nil {
		t.Error("zero.MemcpyPeerAsync: no error")
	}
}

// TestGPUPeer: a device reaches itself; peer access between every pair of
// devices that can is enabled (twice: the second is a no-op) and the pair's
// cuMemcpyPeerAsync moves bytes; one device copying to itself through
// MemcpyPeerAsync works too.
func TestGPUPeer(t *testing.T) {
	d0 := needGPU(t)
	if ok, err := d0.CanAccessPeer(d0); !ok || err != nil {
		t.Fatalf("CanAccessPeer(self) = %v, %v", ok, err)
	}
	n, err := DeviceCount()
	if err != nil {
		t.Fatal(err)
	}
	devs := []*Device{d0}
	for i := 1; i < n; i++ {
		d, err := GetDevice(i)
		if err != nil {
			t.Fatal(err)
		}
		devs = append(devs, d)
	}
	for _, a := range devs {
		for _, b := range devs {
			peerPair(t, a, b)
		}
	}
}

// peerPair enables a's access to b where it can and copies 1 MiB from b
// to a: half with MemcpyPeerAsync, half with MemcpyAsync where a reaches
// b's memory.
func peerPair(t *testing.T, a, b *Device) {
	can, err := a.CanAccessPeer(b)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		err := a.EnablePeerAccess(b)
		if can && err != nil || !can && !errors.Is(err, ErrNotSupported) {
			t.Fatalf("%v.EnablePeerAccess(%v) (can: %v): %v", a, b, can, err)
		}
	}
	const size = 1 << 20
	src, err := b.Alloc(size, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := a.Alloc(size, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	want := make([]byte, size)
	for i := range want {
		want[i] = byte(i*7 + a.Ordinal())
	}
	if err := src.CopyFromHost(want); err != nil {
		t.Fatal(err)
	}
	s, err := a.NewStream(true)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := a.MemcpyPeerAsync(dst.Ptr(), src.Ptr(), b, size/2, s); err != nil {
		t.Fatal(err)
	}
	if can { // unified addressing over the peer link, pool memory included
		if err := a.MemcpyAsync(dst.Ptr()+size/2, src.Ptr()+size/2, size/2, s); err != nil {
			t.Fatal(err)
		}
	} else if err := a.MemcpyPeerAsync(dst.Ptr()+size/2, src.Ptr()+size/2, b, size/2, s); err != nil {
		t.Fatal(err)
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, size)
	if err := dst.CopyToHost(got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%v ← %v: wrong bytes", a, b)
	}
}
