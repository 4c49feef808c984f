package layout

import (
	"errors"
	"testing"
)

func TestParseRoundTrip(t *testing.T) {
	for _, text := range []string{"(4,2):(1,4)x4", "():()x8", "(3,0,5):(-5,7,0)x2", "(1):(9)x1"} {
		l, err := Parse(text)
		if err != nil {
			t.Fatalf("Parse(%q): %v", text, err)
		}
		if got := l.String(); got != text {
			t.Errorf("Parse(%q).String() = %q", text, got)
		}
	}
}

func TestParseDenseDefault(t *testing.T) {
	l, err := Parse("(2, 3)x4")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := l.String(), "(2,3):(3,1)x4"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestParseErrors(t *testing.T) {
	for _, c := range []struct {
		text string
		want error
	}{
		{"(2,3)", ErrItemsize},
		{"(2,3)xfour", ErrItemsize},
		{"(2,3)x0", ErrItemsize},
		{"2,3x4", ErrShape},
		{"(2,a)x4", ErrShape},
		{"(2,-3)x4", ErrShape},
		{"(2,3):(1)x4", ErrStride},
		{"(2,3):(1,b)x4", ErrStride},
	} {
		if _, err := Parse(c.text); !errors.Is(err, c.want) {
			t.Errorf("Parse(%q) = %v, want %v", c.text, err, c.want)
		}
	}
}
