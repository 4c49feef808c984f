package cuda

import (
	"bytes"
	"errors"
	"testing"
)

// TestTempKeep: the release threshold of the pools of temporaries.
func TestTempKeep(t *testing.T) {
	env := func(v string) func(string) string { return func(string) string { return v } }
	if n, err := tempKeep(env("")); n != DefaultTempKeep || err != nil {
		t.Errorf("unset: %d, %v", n, err)
	}
	if n, err := tempKeep(env("4096")); n != 4096 || err != nil {
		t.Errorf("4096: %d, %v", n, err)
	}
	if _, err := tempKeep(env("1GiB")); !errors.Is(err, ErrInvalidValue) {
		t.Errorf("1GiB: %v, want ErrInvalidValue", err)
	}
	if _, err := new(Device).AllocTemp(1, nil); err == nil {
		t.Error("AllocTemp on a zero Device: no error")
	}
}

// TestGPUAllocTemp: temporaries from the pool hold what is written into
// them, after a synchronisation as before, and free in stream order.
func TestGPUAllocTemp(t *testing.T) {
	d := needGPU(t)
	s, err := d.NewStream(true)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	want := bytes.Repeat([]byte{1, 2, 3, 5, 8, 13, 21}, 1<<16)
	for i := range 3 {
		b, err := d.AllocTemp(len(want), s)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Synchronize(); err != nil {
			t.Fatal(err)
		}
		if err := b.CopyFromHost(want); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, len(want))
		if err := b.CopyToHost(got); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("round %d: bytes differ", i)
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		if err := s.Synchronize(); err != nil {
			t.Fatal(err)
		}
	}
	if b, err := d.AllocTemp(0, s); err != nil || b.Size() != 0 {
		t.Errorf("AllocTemp(0): %v, %v", b, err)
	}
}
