package main

import (
	"regexp"
	"testing"
)

// TestPeerCases: the default peer selection takes the named cases it
// names, every one builds and moves at most -shrink bytes, and random
// cases are added after them.
func TestPeerCases(t *testing.T) {
	ps, err := peerCases(regexp.MustCompile(defaultPeerCases), false, randomSpec{N: 3, Seed: 5, Bytes: 1 << 20}, 16<<20)
	if err != nil {
		t.Fatal(err)
	}
	named := 0
	for _, p := range ps {
		if p.Built == nil {
			t.Fatalf("%s: %v", p.Case.Name, p.Err)
		}
		if p.Built.Moved > 16<<20 {
			t.Errorf("%s moves %d bytes, want ≤ 16 MiB", p.Case.Name, p.Built.Moved)
		}
		if !p.Random {
			named++
		}
	}
	if named < 10 || len(ps) != named+3 {
		t.Errorf("%d named and %d random cases, want ≥ 10 and 3", named, len(ps)-named)
	}
	if ps, _ := peerCases(regexp.MustCompile(""), true, randomSpec{}, 0); len(ps) != 0 {
		t.Errorf("no named and no random: %d cases", len(ps))
	}
}
