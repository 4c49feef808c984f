package gen

import (
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
