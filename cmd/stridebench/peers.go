package main

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/stridekit/stridekit/layout"
)

// This file runs the peer frameworks: it writes the expanded case list as
// JSON, runs peers.py on it in a Python subprocess, and attaches the
// per-case results the script prints to the cases' results.

// peersScript is peers.py, embedded so the binary carries it.
//
//go:embed peers.py
var peersScript []byte

// peerNames are the frameworks peers.py knows, in report order.
var peerNames = []string{"torch", "cupy", "jax"}

// errPeers is wrapped by a failure of the peer subprocess as a whole (one
// case's failure is reported in that case's peer result instead).
var errPeers = errors.New("peer frameworks")

// peerCase is one case as peers.py reads it: the arrays and the view
// operations, with every dim number non-negative.
type peerCase struct {
	Name     string   `json:"name"`
	Case     string   `json:"case"` // suite syntax, for messages
	DType    string   `json:"dtype"`
	Itemsize int      `json:"itemsize"`
	Base     []int64  `json:"base"`
	Src      []peerOp `json:"src"`
	DstBase  []int64  `json:"dst_base"`
	Dst      []peerOp `json:"dst"`
	Bytes    int64    `json:"bytes"` // bytes the copy writes
	Small    bool     `json:"small"` // also measure host time per copy
	Seed     uint64   `json:"seed"`  // the source pattern's seed (see check.go)
}

// peerOp is one view operation: perm and flip carry dims, bcast a shape,
// slice one item per entry.
type peerOp struct {
	Op    string     `json:"op"`
	Dims  []int64    `json:"dims,omitempty"`
	Shape []int64    `json:"shape,omitempty"`
	Items []peerItem `json:"items,omitempty"`
}

// peerItem is a slice entry: an index, or start/stop/step with null for an
// omitted bound.
type peerItem struct {
	Index *int64 `json:"index,omitempty"`
	Start *int64 `json:"start"`
	Stop  *int64 `json:"stop"`
	Step  int64  `json:"step"`
}

// peerResult is one framework's figures for one case, as peers.py prints
// them, plus the ratio computed here.
type peerResult struct {
	// Status is ok, unsupported (the framework cannot express the case),
	// unavailable (not installed, or no GPU), mismatch (wrong result) or
	// error.
	Status    string  `json:"status"`
	Reason    string  `json:"reason,omitempty"`
	TimeS     float64 `json:"time_s,omitempty"`     // median seconds per copy
	MemcpyS   float64 `json:"memcpy_s,omitempty"`   // the framework's own memcpy of the same bytes
	PctMemcpy float64 `json:"pct_memcpy,omitempty"` // 100 · MemcpyS / TimeS
	Verified  bool    `json:"verified,omitempty"`
	HostS     float64 `json:"host_s_per_copy,omitempty"` // small cases: wall time per copy from Python
	// Trusted (JAX) says whether its identity copy ran within 85–115% of a
	// real memcpy, i.e. whether its timing method can be believed.
	Trusted     *bool   `json:"trusted,omitempty"`
	IdentityPct float64 `json:"identity_pct_memcpy,omitempty"`
	// Ratio is stridekit's % of memcpy over this framework's: above 1,
	// stridekit is faster. Computed here, 0 when either is missing.
	Ratio float64 `json:"stridekit_ratio,omitempty"`
}

// peerLine is one line of peers.py's output: a header with versions, or
// one case.
type peerLine struct {
	Versions map[string]string      `json:"versions"`
	Name     string                 `json:"name"`
	Peers    map[string]*peerResult `json:"peers"`
}

// toPeerCase converts a built case.
func toPeerCase(b *built) (peerCase, error) {
	c := b.Case
	src, err := toPeerOps(b.SrcBase, c.Src)
	if err != nil {
		return peerCase{}, err
	}
	dst, err := toPeerOps(b.DstBase, c.Dst)
	if err != nil {
		return peerCase{}, err
	}
	return peerCase{
		Name: c.Name, Case: c.String(), DType: c.DType.Name(), Itemsize: b.Item,
		Base: b.SrcBase.Shape(), Src: src, DstBase: b.DstBase.Shape(), Dst: dst,
		Bytes: b.Moved, Small: b.Moved <= smallBytes, Seed: caseSeed(c.Name),
	}, nil
}

// toPeerOps converts ops applied to l, making flip dims non-negative (a
// framework that adds a trailing byte dim for odd item sizes would read a
// negative dim differently).
func toPeerOps(l layout.Layout, ops []viewOp) ([]peerOp, error) {
	out := []peerOp{}
	for k, op := range ops {
		p := peerOp{Op: opNames[op.Kind]}
		switch op.Kind {
		case opPerm:
			p.Dims = op.Args
		case opFlip:
			for _, d := range op.Args {
				if d < 0 {
					d += int64(l.NDim())
				}
				p.Dims = append(p.Dims, d)
			}
		case opBcast:
			p.Shape = op.Args
		case opSlice:
			for _, it := range op.Items {
				var pi peerItem
				if it.Index {
					pi.Index = ptr(it.Start)
				} else {
					pi.Step = it.Step
					if it.Start != layout.Omit {
						pi.Start = ptr(it.Start)
					}
					if it.Stop != layout.Omit {
						pi.Stop = ptr(it.Stop)
					}
				}
				p.Items = append(p.Items, pi)
			}
		}
		out = append(out, p)
		var err error
		if l, _, err = applyOps(l, ops[k:k+1]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func ptr(v int64) *int64 { return &v }

// writePeerCases writes the cases that were built (and are not too large to
// run) as a JSON array.
func writePeerCases(w io.Writer, ps []prepared) (int, error) {
	list := []peerCase{}
	for _, p := range ps {
		if p.Built == nil || checkSize(p.Built) != nil {
			continue
		}
		pc, err := toPeerCase(p.Built)
		if err != nil {
			return 0, err
		}
		list = append(list, pc)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", " ")
	return len(list), enc.Encode(list)
}

// peerOptions configures the peer run.
type peerOptions struct {
	Python       string   // interpreter
	Script       string   // peers.py to run; "" runs the embedded copy
	Frameworks   []string // subset of peerNames
	Reps, Warmup int
	LatencyIters int
	Stderr       io.Writer // where the script's stderr goes (nil: kept for errors only)
}

// runPeers runs peers.py on the prepared cases and attaches what it prints
// to results (matched by name). done is called once per case line. It
// returns the framework versions the script reported.
func runPeers(ctx context.Context, opt peerOptions, ps []prepared, results []*result, done func()) (map[string]string, error) {
	dir, err := os.MkdirTemp("", "stridebench-peers-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	casesPath := filepath.Join(dir, "cases.json")
	f, err := os.Create(casesPath)
	if err != nil {
		return nil, err
	}
	if _, err := writePeerCases(f, ps); err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	script := opt.Script
	if script == "" {
		script = filepath.Join(dir, "peers.py")
		if err := os.WriteFile(script, peersScript, 0o644); err != nil {
			return nil, err
		}
	}
	fw := strings.Join(opt.Frameworks, ",")
	cmd := exec.CommandContext(ctx, opt.Python, script,
		"--cases", casesPath,
		"--reps", strconv.Itoa(opt.Reps),
		"--warmup", strconv.Itoa(opt.Warmup),
		"--latency-iters", strconv.Itoa(opt.LatencyIters),
		"--frameworks", fw)
	var errTail tailBuffer
	cmd.Stderr = &errTail
	if opt.Stderr != nil {
		cmd.Stderr = io.MultiWriter(&errTail, opt.Stderr)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%w: starting %s: %w", errPeers, opt.Python, err)
	}
	byName := map[string]*result{}
	for _, r := range results {
		byName[r.Name] = r
	}
	versions := map[string]string{}
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var parseErr error
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 || line[0] != '{' {
			continue
		}
		var pl peerLine
		if err := json.Unmarshal(line, &pl); err != nil {
			if parseErr == nil {
				parseErr = fmt.Errorf("%w: bad output line %.200q: %w", errPeers, line, err)
			}
			continue
		}
		for k, v := range pl.Versions {
			versions[k] = v
		}
		if pl.Name == "" {
			continue
		}
		if r := byName[pl.Name]; r != nil {
			r.Peers = pl.Peers
			fillRatios(r)
		}
		if done != nil {
			done()
		}
	}
	werr := cmd.Wait()
	if werr != nil {
		return versions, fmt.Errorf("%w: %s %s: %w; stderr ends:\n%s", errPeers, opt.Python, script, werr, errTail.String())
	}
	return versions, parseErr
}

// fillRatios sets each peer's Ratio from the stridekit result.
func fillRatios(r *result) {
	for _, p := range r.Peers {
		if p == nil {
			continue
		}
		p.Ratio = 0
		if r.Status == statusOK && p.Status == "ok" && p.PctMemcpy > 0 && r.PctMemcpy > 0 {
			p.Ratio = r.PctMemcpy / p.PctMemcpy
		}
	}
}

// tailBuffer keeps the last 16 KiB written to it.
type tailBuffer struct{ b []byte }

func (t *tailBuffer) Write(p []byte) (int, error) {
	const keep = 16 << 10
	t.b = append(t.b, p...)
	if len(t.b) > keep {
		t.b = t.b[len(t.b)-keep:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string { return string(t.b) }
