package layout

import (
	"fmt"
	"strconv"
	"strings"
)

// Parse reads the form printed by Layout.String, "(shape):(strides)xitemsize",
// e.g. "(4,2):(1,4)x4". The ":(strides)" part may be left out for a dense C
// layout ("(4,2)x4"), and "()" is the 0-dim shape. Spaces are ignored. It is
// meant for command lines, test tables and configuration files.
func Parse(s string) (Layout, error) {
	t := strings.ReplaceAll(s, " ", "")
	x := strings.LastIndexByte(t, 'x')
	if x < 0 {
		return Layout{}, fmt.Errorf("%w: layout %q has no 'x<itemsize>' suffix", ErrItemsize, s)
	}
	item, err := strconv.Atoi(t[x+1:])
	if err != nil {
		return Layout{}, fmt.Errorf("%w: layout %q: itemsize %q is not an integer", ErrItemsize, s, t[x+1:])
	}
	body := t[:x]
	shapeText, strideText, hasStrides := strings.Cut(body, ":")
	shape, err := parseTuple(shapeText)
	if err != nil {
		return Layout{}, fmt.Errorf("%w: layout %q: shape %v", ErrShape, s, err)
	}
	if !hasStrides {
		return New(shape, nil, item)
	}
	strides, err := parseTuple(strideText)
	if err != nil {
		return Layout{}, fmt.Errorf("%w: layout %q: strides %v", ErrStride, s, err)
	}
	if strides == nil {
		strides = []int64{}
	}
	return New(shape, strides, item)
}

// parseTuple reads "(a,b,c)" into a slice; "()" gives an empty, non-nil slice.
func parseTuple(t string) ([]int64, error) {
	if len(t) < 2 || t[0] != '(' || t[len(t)-1] != ')' {
		return nil, fmt.Errorf("%q is not a parenthesised list", t)
	}
	in := t[1 : len(t)-1]
	out := []int64{}
	if in == "" {
		return out, nil
	}
	for _, f := range strings.Split(in, ",") {
		v, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("entry %q is not an integer", f)
		}
		out = append(out, v)
	}
	return out, nil
}
