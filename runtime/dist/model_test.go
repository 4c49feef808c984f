package dist

import (
	"errors"
	"slices"
	"testing"

	"github.com/stridekit/stridekit/layout"
	"github.com/stridekit/stridekit/runtime/memview"
)

func TestMesh(t *testing.T) {
	m := mustMesh(t, 2, 3)
	if m.Size() != 6 || m.NDim() != 2 || m.String() != "mesh(2,3)" || !slices.Equal(m.Sizes(), []int{2, 3}) {
		t.Errorf("mesh %v: size %d ndim %d", m, m.Size(), m.NDim())
	}
	for r := range 6 {
		c, err := m.Coords(r)
		if err != nil || c[0] != r/3 || c[1] != r%3 {
			t.Errorf("Coords(%d) = %v, %v", r, c, err)
		}
		if back, err := m.Rank(c...); err != nil || back != r {
			t.Errorf("Rank(%v) = %d, %v; want %d", c, back, err, r)
		}
	}
	var zero Mesh
	if zero.Size() != 1 || !zero.Equal(mustMesh(t)) {
		t.Errorf("zero mesh: size %d", zero.Size())
	}
	for _, sizes := range [][]int{{0}, {2, -1}, {1 << 20, 1 << 20}} {
		if _, err := NewMesh(sizes...); !errors.Is(err, ErrMesh) {
			t.Errorf("NewMesh(%v): %v", sizes, err)
		}
	}
	for _, r := range []int{-1, 6} {
		if _, err := m.Coords(r); !errors.Is(err, ErrRank) {
			t.Errorf("Coords(%d): %v", r, err)
		}
	}
	for _, c := range [][]int{{1}, {2, 0}, {0, -1}} {
		if _, err := m.Rank(c...); !errors.Is(err, ErrRank) {
			t.Errorf("Rank(%v): %v", c, err)
		}
	}
}

func TestSpecErrors(t *testing.T) {
	m := mustMesh(t, 2, 2)
	for _, c := range []struct {
		shape []int64
		spec  Spec
		want  error
	}{
		{[]int64{4, 4}, Spec{{0}, {0}}, ErrSpec},
		{[]int64{4, 4}, Spec{{1, 1}}, ErrSpec},
		{[]int64{4, 4}, Spec{{2}}, ErrSpec},
		{[]int64{4, 4}, Spec{{-1}}, ErrSpec},
		{[]int64{4}, Spec{{0}, {1}}, ErrSpec},
		{[]int64{4, -1}, nil, ErrShape},
	} {
		if _, err := NewSharding(c.shape, m, c.spec); !errors.Is(err, c.want) {
			t.Errorf("NewSharding(%v, %v): %v, want %v", c.shape, c.spec, err, c.want)
		}
	}
	if s := (Spec{{0}, nil, {1, 2}}).String(); s != "(0, None, (1, 2))" {
		t.Errorf("Spec.String: %s", s)
	}
}

// TestBlockOf checks blocks against the definition: balanced parts in
// the mixed-radix order of the spec's axes, major first.
func TestBlockOf(t *testing.T) {
	m := mustMesh(t, 2, 3)
	s := mustSharding(t, []int64{7, 5, 3}, m, Spec{{1, 0}, nil})
	if p := s.Parts(); !slices.Equal(p, []int{6, 1, 1}) || s.Replicas() != 1 {
		t.Errorf("parts %v replicas %d", p, s.Replicas())
	}
	cuts := []int64{0, 1, 2, 3, 4, 5, 7} // i·7/6
	for r := range 6 {
		b, err := s.BlockOf(r)
		if err != nil {
			t.Fatal(err)
		}
		i := (r%3)*2 + r/3 // axis 1 major, axis 0 minor
		want := Block{{cuts[i], cuts[i+1]}, {0, 5}, {0, 3}}
		if !slices.Equal(b, want) {
			t.Errorf("rank %d: block %v, want %v", r, b, want)
		}
	}
	// Over-split: 2 rows on 6 ranks leave 4 empty blocks.
	s = mustSharding(t, []int64{2}, m, Spec{{0, 1}})
	empty := 0
	for r := range 6 {
		b, _ := s.BlockOf(r)
		if b.Empty() {
			empty++
		}
	}
	if empty != 4 {
		t.Errorf("%d empty blocks of 2 rows on 6 ranks", empty)
	}
	r := mustSharding(t, []int64{4}, m, Spec{{1}})
	if r.Replicas() != 2 {
		t.Errorf("replicas over axis 0: %d", r.Replicas())
	}
	if _, err := r.BlockOf(6); !errors.Is(err, ErrRank) {
		t.Errorf("BlockOf(6): %v", err)
	}
	// Huge extents cut without overflow.
	h := mustSharding(t, []int64{1<<63 - 1}, mustMesh(t, 3), Spec{{0}})
	b, _ := h.BlockOf(2)
	if b[0].Hi != 1<<63-1 || b[0].Lo != (1<<63-1)/3*2 {
		t.Errorf("huge block %v", b)
	}
}

func TestNewDistViewErrors(t *testing.T) {
	s := mustSharding(t, []int64{4, 6}, mustMesh(t, 2), Spec{nil, {0}})
	l, _ := s.LocalLayout(1, layout.Float32, layout.F)
	v, _ := memview.FromHost(make([]float32, 12), l)
	d, err := NewDistView(s, layout.Float32, 1, v)
	if err != nil || !slices.Equal(d.Block(), Block{{0, 4}, {3, 6}}) || d.Rank() != 1 || d.DType() != layout.Float32 {
		t.Fatalf("NewDistView: %v, %v", d, err)
	}
	wrong, _ := memview.FromHost(make([]float32, 12), mustLayout(layout.New([]int64{3, 4}, nil, 4)))
	for _, c := range []struct {
		name  string
		dt    layout.DType
		rank  int
		local *memview.StridedMemoryView
		want  error
	}{
		{"rank 2", layout.Float32, 2, v, ErrRank},
		{"rank -1", layout.Float32, -1, v, ErrRank},
		{"nil local", layout.Float32, 0, nil, ErrNil},
		{"int32 of a float32 view", layout.Int32, 0, v, ErrDType},
		{"fp4", layout.Float4E2M1, 0, v, ErrDType},
		{"zero dtype", layout.DType{}, 0, v, ErrDType},
		{"3×4 local", layout.Float32, 0, wrong, ErrShape},
	} {
		if _, err := NewDistView(s, c.dt, c.rank, c.local); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	g, _ := memview.FromHost(make([]float32, 25), mustLayout(layout.New([]int64{5, 5}, nil, 4)))
	if err := d.LoadFrom(g, nil); !errors.Is(err, ErrShape) {
		t.Errorf("LoadFrom a 5×5 view: %v", err)
	}
	if err := d.StoreTo(nil, nil); !errors.Is(err, ErrNil) {
		t.Errorf("StoreTo nil: %v", err)
	}
	if !slices.Equal(d.Shape(), []int64{4, 6}) || d.Mesh().Size() != 2 || d.Spec().String() != "(None, 0)" ||
		d.Sharding().String() != "(4,6) over mesh(2) as (None, 0)" || d.Local() != v || d.Sharding().NDim() != 2 {
		t.Errorf("accessors of %v", d)
	}
	// Accessors return copies.
	d.Shape()[0] = 9
	d.Spec()[1][0] = 7
	d.Block()[0] = Interval{}
	if d.Shape()[0] != 4 || d.Spec()[1][0] != 0 || d.Block()[0] != (Interval{0, 4}) {
		t.Errorf("accessors share memory: %v", d)
	}
}
