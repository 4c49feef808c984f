package gen

import (
	"strings"
	"testing"

	"github.com/stridekit/stridekit/layout"
)

func TestSourceAllClasses(t *testing.T) {
	for _, s := range []string{
		"elem:nd=3,item=2,vec=1,idx=64",
		"tile:nd=3,fast=0,item=1,vec=16,idx=32", "bcast:nd=2,item=4,vec=4,idx=32",
		"fill:nd=4,item=3,vec=1,idx=64", "tile:nd=2,fast=0,item=3,vec=2,idx=32",
		"btile:nd=4,item=1,vec=1,idx=32", "btile:nd=2,item=7,vec=1,idx=64", "btile:nd=5,item=12,vec=1,idx=32",
	} {
		sig, err := layout.ParseSignature(s)
		if err != nil {
			t.Fatal(err)
		}
		src, err := Source(sig, KnobsFor(sig, 90))
		if err != nil {
			t.Fatal(err)
		}
		if testing.Verbose() && s == "tile:nd=3,fast=0,item=1,vec=16,idx=32" {
			t.Log(src)
		}
	}
}

// TestStagePitch checks the staged tile kernel's row pitch for 3-byte
// items in vectors of four (64×64 tiles: 48 words a dst row, 16 micro-tile
// rows): 52 words, the pitch at which a warp's 32 lanes write 32 distinct
// banks, and no pitch under it does.
func TestStagePitch(t *testing.T) {
	lanesBanks := func(rw int) int {
		seen := map[int]bool{}
		for m := 0; m < 32; m++ {
			seen[((m/16)*4*rw+(m%16)*3)%32] = true
		}
		return len(seen)
	}
	rw := stagePitch(4, 3, 48, 16)
	if rw != 52 || lanesBanks(rw) != 32 {
		t.Errorf("stagePitch(4, 3, 48, 16) = %d (%d banks), want 52 (32 banks)", rw, lanesBanks(rw))
	}
	for p := 48; p < rw; p++ {
		if lanesBanks(p) == 32 {
			t.Errorf("pitch %d also has no conflicts; stagePitch chose %d", p, rw)
		}
	}
	src, err := Source(layout.Signature{Class: layout.ClassTile, NDim: 2, Itemsize: 3, Vec: 4}, KnobsFor(layout.Signature{Class: layout.ClassTile, NDim: 2, Itemsize: 3, Vec: 4}, 90))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(src, "enum { RW = 52 };") || !strings.Contains(src, "storeWords(") {
		t.Error("the default 3-byte tile kernel is not the staged one with a 52-word pitch")
	}
}
