package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/stridekit/stridekit/layout"
)

// This file reads case suites: one case a line, in the syntax the package
// doc describes, into Case values, and writes Case values back in the same
// syntax (so random cases print as lines a suite file could hold).

// errSyntax is wrapped by every error about the text of a case line.
var errSyntax = errors.New("bad case syntax")

// syntaxError is a parse error at one token of one line of a suite file.
type syntaxError struct {
	File  string // file name as given, or "<input>"
	Line  int    // 1-based line number
	Token string // the offending token
	Msg   string // what is wrong with it
}

func (e *syntaxError) Error() string {
	return fmt.Sprintf("%s:%d: %s: token %q: %s", e.File, e.Line, errSyntax, e.Token, e.Msg)
}

// Is makes errors.Is(err, errSyntax) true for every syntaxError.
func (e *syntaxError) Is(target error) bool { return target == errSyntax }

// opKind names a view operation.
type opKind uint8

const (
	opPerm  opKind = iota + 1 // perm(d0,d1,…): layout.Permute
	opSlice                   // slice(r0,r1,…): layout.Slice and layout.Index
	opFlip                    // flip(d,…): reverse the listed dims
	opBcast                   // bcast(e0,e1,…): layout.BroadcastTo
)

var opNames = map[opKind]string{opPerm: "perm", opSlice: "slice", opFlip: "flip", opBcast: "bcast"}

// sliceItem is one entry of slice(…): a Python slice start:stop:step (bounds
// layout.Omit when left out) or, with Index set, an integer index that drops
// its dim.
type sliceItem struct {
	Index             bool
	Start, Stop, Step int64 // Index: Start holds the index
}

// viewOp is one operation of a view expression.
type viewOp struct {
	Kind  opKind
	Args  []int64     // perm and flip: dims; bcast: the target shape
	Items []sliceItem // slice
}

// Case is one benchmark case: a dense C-order source array of Base items of
// DType, the source view taken of it with Src, and the destination: a dense
// C-order array of DstBase (inferred from the source view's shape and Dst
// when nil) viewed through Dst.
type Case struct {
	Name    string
	DType   layout.DType
	Base    []int64
	Src     []viewOp
	Dst     []viewOp
	DstBase []int64
	// File and Line say where the case was read (Line 0: generated).
	File string
	Line int
}

var caseName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.+-]*$`)

// parseSuiteFile reads the suite file at path.
func parseSuiteFile(path string) ([]*Case, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parseSuite(f, path)
}

// parseSuite reads a suite: one case a line, '#' starts a comment, blank
// lines are skipped. Case names must be unique. file names the input in
// error messages.
func parseSuite(r io.Reader, file string) ([]*Case, error) {
	var cases []*Case
	seen := map[string]int{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		c, err := parseCaseLine(sc.Text(), file, n)
		if err != nil {
			return nil, err
		}
		if c == nil {
			continue
		}
		if prev, ok := seen[c.Name]; ok {
			return nil, &syntaxError{file, n, c.Name, fmt.Sprintf("case name already used on line %d", prev)}
		}
		seen[c.Name] = n
		cases = append(cases, c)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return cases, nil
}

// parseCaseLine parses one line; it returns nil, nil for a blank or comment
// line.
func parseCaseLine(line, file string, n int) (*Case, error) {
	if i := strings.IndexByte(line, '#'); i >= 0 {
		line = line[:i]
	}
	bad := func(tok, format string, args ...any) error {
		return &syntaxError{file, n, tok, fmt.Sprintf(format, args...)}
	}
	fields, err := splitFields(line)
	if err != nil {
		return nil, bad(err.tok, "%s", err.msg)
	}
	if len(fields) == 0 {
		return nil, nil
	}
	if len(fields) < 3 {
		return nil, bad(strings.TrimSpace(line), "a case needs at least NAME DTYPE SHAPE")
	}
	c := &Case{File: file, Line: n}
	if !caseName.MatchString(fields[0]) {
		return nil, bad(fields[0], "a case name is letters, digits and _ . + - (starting with a letter or digit)")
	}
	c.Name = fields[0]
	dt, derr := parseDType(fields[1])
	if derr != nil {
		return nil, bad(fields[1], "%v", derr)
	}
	c.DType = dt
	base, msg := parseShape(fields[2])
	if msg != "" {
		return nil, bad(fields[2], "%s", msg)
	}
	c.Base = base
	seenKey := map[string]bool{}
	for _, f := range fields[3:] {
		key, val, ok := strings.Cut(f, "=")
		if !ok {
			return nil, bad(f, "expected src=EXPR, dst=EXPR or dstbase=SHAPE")
		}
		if seenKey[key] {
			return nil, bad(f, "%s= given twice", key)
		}
		seenKey[key] = true
		switch key {
		case "src", "dst":
			ops, perr := parseExpr(val)
			if perr != nil {
				return nil, bad(perr.tok, "%s", perr.msg)
			}
			if key == "src" {
				c.Src = ops
			} else {
				c.Dst = ops
			}
		case "dstbase":
			s, msg := parseShape(val)
			if msg != "" {
				return nil, bad(val, "%s", msg)
			}
			c.DstBase = s
		default:
			return nil, bad(f, "unknown key %q (want src, dst or dstbase)", key)
		}
	}
	return c, nil
}

// parseDType reads a DTYPE with layout.ParseDType, the parser stridekit
// uses too (its names, aliases and xN for opaque items of N bytes). Sub-byte
// types are refused: a benchmark case moves whole items.
func parseDType(s string) (layout.DType, error) {
	d, err := layout.ParseDType(s)
	if err != nil {
		return d, err
	}
	if d.Itemsize() == 0 {
		return d, fmt.Errorf("%w: %v is a sub-byte type; cases need whole-byte items", layout.ErrDType, d)
	}
	return d, nil
}

// parseErr is a parse failure inside a line: the token and what is wrong.
type parseErr struct{ tok, msg string }

// splitFields splits line at whitespace outside parentheses.
func splitFields(line string) ([]string, *parseErr) {
	var out []string
	depth, start := 0, -1
	for i, r := range line {
		if (r == ' ' || r == '\t' || r == '\r') && depth == 0 {
			if start >= 0 {
				out = append(out, line[start:i])
				start = -1
			}
			continue
		}
		if start < 0 {
			start = i
		}
		switch r {
		case '(':
			depth++
		case ')':
			depth--
			if depth < 0 {
				return nil, &parseErr{fieldAt(line, start, i+1), "unbalanced ')'"}
			}
		}
	}
	if depth != 0 {
		return nil, &parseErr{fieldAt(line, start, len(line)), "unbalanced '('"}
	}
	if start >= 0 {
		out = append(out, line[start:])
	}
	return out, nil
}

func fieldAt(line string, start, end int) string {
	if start < 0 {
		start = 0
	}
	return strings.TrimSpace(line[start:end])
}

// parseShape reads "AxBxC" (a single extent is a 1-d shape). Extents are
// positive integers.
func parseShape(s string) ([]int64, string) {
	if s == "" {
		return nil, "empty shape"
	}
	var out []int64
	for _, p := range strings.Split(s, "x") {
		v, err := strconv.ParseInt(p, 10, 64)
		if err != nil || v < 1 {
			return nil, fmt.Sprintf("extent %q is not a positive integer (a shape is written AxBxC)", p)
		}
		out = append(out, v)
	}
	return out, ""
}

// parseExpr reads a view expression: operations joined by '.', e.g.
// "slice(:,::2).perm(1,0)". The empty expression is the identity.
func parseExpr(s string) ([]viewOp, *parseErr) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	var ops []viewOp
	for _, part := range splitTop(s, '.') {
		op, err := parseOp(strings.TrimSpace(part))
		if err != nil {
			return nil, err
		}
		ops = append(ops, op)
	}
	return ops, nil
}

// splitTop splits s at sep outside parentheses.
func splitTop(s string, sep byte) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(':
			depth++
		case ')':
			depth--
		case sep:
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}

func parseOp(s string) (viewOp, *parseErr) {
	open := strings.IndexByte(s, '(')
	if open < 0 || !strings.HasSuffix(s, ")") {
		return viewOp{}, &parseErr{s, "an operation is NAME(ARGS): perm, slice, flip or bcast"}
	}
	name, body := s[:open], s[open+1:len(s)-1]
	var kind opKind
	for k, n := range opNames {
		if n == name {
			kind = k
		}
	}
	if kind == 0 {
		return viewOp{}, &parseErr{s, fmt.Sprintf("unknown operation %q (want perm, slice, flip or bcast)", name)}
	}
	var args []string
	if strings.TrimSpace(body) != "" {
		for _, a := range strings.Split(body, ",") {
			args = append(args, strings.TrimSpace(a))
		}
	}
	if len(args) == 0 {
		return viewOp{}, &parseErr{s, name + " needs at least one argument"}
	}
	op := viewOp{Kind: kind}
	if kind == opSlice {
		for _, a := range args {
			it, msg := parseSliceItem(a)
			if msg != "" {
				return viewOp{}, &parseErr{a, msg}
			}
			op.Items = append(op.Items, it)
		}
		return op, nil
	}
	for _, a := range args {
		v, err := strconv.ParseInt(a, 10, 64)
		if err != nil {
			return viewOp{}, &parseErr{a, name + " takes integers"}
		}
		if kind == opBcast && v < 1 {
			return viewOp{}, &parseErr{a, "bcast extents must be positive"}
		}
		op.Args = append(op.Args, v)
	}
	return op, nil
}

// parseSliceItem reads "start:stop:step" (any part may be left out), ":" or
// an integer index.
func parseSliceItem(a string) (sliceItem, string) {
	if a == "" {
		return sliceItem{}, "empty slice entry (use ':' for a whole dim)"
	}
	if !strings.Contains(a, ":") {
		v, err := strconv.ParseInt(a, 10, 64)
		if err != nil {
			return sliceItem{}, "a slice entry is start:stop:step or an integer index"
		}
		return sliceItem{Index: true, Start: v}, ""
	}
	parts := strings.Split(a, ":")
	if len(parts) > 3 {
		return sliceItem{}, "a slice entry has at most two ':'"
	}
	it := sliceItem{Start: layout.Omit, Stop: layout.Omit, Step: 1}
	dst := []*int64{&it.Start, &it.Stop, &it.Step}
	for i, p := range parts {
		if p == "" {
			continue
		}
		v, err := strconv.ParseInt(p, 10, 64)
		if err != nil || v == layout.Omit {
			return sliceItem{}, fmt.Sprintf("slice bound %q is not an integer", p)
		}
		*dst[i] = v
	}
	if it.Step == 0 {
		return sliceItem{}, "slice step must not be 0"
	}
	return it, ""
}

// String writes the operation in the suite syntax.
func (op viewOp) String() string {
	var parts []string
	if op.Kind == opSlice {
		for _, it := range op.Items {
			parts = append(parts, it.String())
		}
	} else {
		for _, a := range op.Args {
			parts = append(parts, strconv.FormatInt(a, 10))
		}
	}
	return opNames[op.Kind] + "(" + strings.Join(parts, ",") + ")"
}

// String writes a slice entry in Python's notation: "::2", "1:-1", "3".
func (it sliceItem) String() string {
	if it.Index {
		return strconv.FormatInt(it.Start, 10)
	}
	f := func(v int64) string {
		if v == layout.Omit {
			return ""
		}
		return strconv.FormatInt(v, 10)
	}
	s := f(it.Start) + ":" + f(it.Stop)
	if it.Step != 1 {
		s += ":" + strconv.FormatInt(it.Step, 10)
	}
	return s
}

// exprString writes a view expression ("" for the identity).
func exprString(ops []viewOp) string {
	parts := make([]string, len(ops))
	for i, op := range ops {
		parts[i] = op.String()
	}
	return strings.Join(parts, ".")
}

// shapeString writes a shape as "AxBxC".
func shapeString(s []int64) string {
	parts := make([]string, len(s))
	for i, e := range s {
		parts[i] = strconv.FormatInt(e, 10)
	}
	return strings.Join(parts, "x")
}

// String writes the case as a suite line that parses back to it.
func (c *Case) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %s", c.Name, c.DType.Name(), shapeString(c.Base))
	if len(c.Src) > 0 {
		b.WriteString(" src=" + exprString(c.Src))
	}
	if len(c.Dst) > 0 {
		b.WriteString(" dst=" + exprString(c.Dst))
	}
	if c.DstBase != nil {
		b.WriteString(" dstbase=" + shapeString(c.DstBase))
	}
	return b.String()
}

// where names the origin of the case for error messages.
func (c *Case) where() string {
	if c.Line == 0 {
		return "case " + c.Name
	}
	return fmt.Sprintf("case %s (%s:%d)", c.Name, c.File, c.Line)
}
