package kernels

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stridekit/stridekit/internal/testenv"
	"github.com/stridekit/stridekit/layout"
)

// TestGPUSpans copies spanCases on the GPU in both tiers against
// runtime/hostcopy, with the src view at two addresses: the kernel loads
// each src run as the span from its lowest element to its highest. A case
// whose plan does not take spans fails the test, so the path runs
// (compute-sanitizer runs this test too; with -short, one address).
func TestGPUSpans(t *testing.T) {
	dev := testenv.NeedGPU(t)
	st := testenv.NewStream(t, dev)
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 41))
	pads := []int{0, 6}
	if testing.Short() {
		pads = pads[:1]
	}
	for _, c := range spanCases {
		dl, sl := c.views(t)
		p, err := layout.PlanCopy(dl, sl, PlanOptions(dev, 256, 256, c.item))
		if err != nil {
			t.Fatal(err)
		}
		if p.Box == nil || !p.Box.Src.Holes {
			t.Errorf("%s: plan %v tile %v, want src runs as spans", c.name, p.Sig, p.Tile)
			continue
		}
		for _, spec := range []bool{false, true} {
			for _, pad := range pads {
				sig, err := runCase(t, dev, st, r, gpuCase{name: c.name, dl: dl, sl: sl, padS: pad, spec: spec})
				if err != nil {
					t.Error(err)
				} else if sig != p.Sig {
					t.Errorf("%s, src %d bytes in: plan %v, want %v", c.name, pad, sig, p.Sig)
				}
			}
		}
	}
}
