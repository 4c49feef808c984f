package gen

import (
	"fmt"
	"io"
	"io/fs"
	"text/template/parse"
)

// The kernel templates are text/template sources (package templates), but
// a program that copies data renders them without package text/template:
// its executor finds fields and methods through reflect, and a binary that
// can call methods by name must keep every exported method of every type it
// links, over a megabyte for the runtime. render is an executor for the
// subset of the template language the kernel templates use, on text/template's
// own parser (which needs no reflect): text, {{.Field}}, {{$.Field}},
// {{$v.Field}}, {{if}}/{{else if}}/{{else}}, {{range $v := .List}},
// {{template "name" .}}, {{define}}, the functions eq and not, and trim
// markers. The data is reached through the fielder interface instead of
// reflect. A test renders every default signature and random ones with both
// executors and requires identical bytes.

// fielder is a template's view of its data: the value of the field name,
// or false when there is none.
type fielder interface {
	field(name string) (any, bool)
}

// templateFuncs are the functions the kernel templates call; the parser
// needs to know their names (the values are never called: render
// implements them).
var templateFuncs = map[string]any{"eq": true, "not": true}

// parseTemplates parses every file of fsys matching pattern into one set of
// named trees: each file's top level under its base name, and its
// {{define}}d templates under theirs, as template.ParseFS names them.
func parseTemplates(fsys fs.FS, pattern string) (map[string]*parse.Tree, error) {
	names, err := fs.Glob(fsys, pattern)
	if err != nil {
		return nil, err
	}
	set := map[string]*parse.Tree{}
	for _, name := range names {
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		trees, err := parse.Parse(name, string(b), "", "", templateFuncs)
		if err != nil {
			return nil, err
		}
		for n, t := range trees {
			// An empty tree (a file of only {{define}}s) yields to a full one.
			old, dup := set[n]
			switch {
			case !dup || parse.IsEmptyTree(old.Root):
				set[n] = t
			case !parse.IsEmptyTree(t.Root):
				return nil, fmt.Errorf("template %q defined twice", n)
			}
		}
	}
	return set, nil
}

// renderer executes one template of a set.
type renderer struct {
	set  map[string]*parse.Tree
	w    io.Writer
	vars []variable // in scope, innermost last; vars[0] is $
}

type variable struct {
	name  string
	value any
}

// render writes template name of set, executed on data, to w.
func render(w io.Writer, set map[string]*parse.Tree, name string, data fielder) error {
	t := set[name]
	if t == nil {
		return fmt.Errorf("no template %q", name)
	}
	r := &renderer{set: set, w: w, vars: []variable{{"$", data}}}
	return r.walk(data, t.Root)
}

func (r *renderer) walk(dot any, n parse.Node) error {
	switch n := n.(type) {
	case *parse.ListNode:
		for _, c := range n.Nodes {
			if err := r.walk(dot, c); err != nil {
				return err
			}
		}
		return nil
	case *parse.TextNode:
		_, err := r.w.Write(n.Text)
		return err
	case *parse.ActionNode:
		if len(n.Pipe.Decl) > 0 {
			return fmt.Errorf("%s: declarations outside range are not supported", n)
		}
		v, err := r.pipe(dot, n.Pipe)
		if err != nil {
			return err
		}
		_, err = fmt.Fprint(r.w, v)
		return err
	case *parse.IfNode:
		v, err := r.pipe(dot, n.Pipe)
		if err != nil {
			return err
		}
		ok, err := truth(v)
		if err != nil {
			return fmt.Errorf("%s: %w", n, err)
		}
		if ok {
			return r.walk(dot, n.List)
		}
		if n.ElseList != nil {
			return r.walk(dot, n.ElseList)
		}
		return nil
	case *parse.RangeNode:
		return r.rangeOver(dot, n)
	case *parse.TemplateNode:
		t := r.set[n.Name]
		if t == nil {
			return fmt.Errorf("%s: no template %q", n, n.Name)
		}
		var nd any
		if n.Pipe != nil {
			v, err := r.pipe(dot, n.Pipe)
			if err != nil {
				return err
			}
			nd = v
		}
		saved := r.vars
		r.vars = []variable{{"$", nd}}
		err := r.walk(nd, t.Root)
		r.vars = saved
		return err
	}
	return fmt.Errorf("%s: unsupported template node", n)
}

func (r *renderer) rangeOver(dot any, n *parse.RangeNode) error {
	if len(n.Pipe.Decl) > 1 {
		return fmt.Errorf("%s: range with two variables is not supported", n)
	}
	v, err := r.pipe(dot, n.Pipe)
	if err != nil {
		return err
	}
	list, ok := v.([]fielder)
	if !ok {
		return fmt.Errorf("%s: range over %T", n, v)
	}
	if len(list) == 0 {
		if n.ElseList != nil {
			return r.walk(dot, n.ElseList)
		}
		return nil
	}
	depth := len(r.vars)
	for _, e := range list {
		r.vars = r.vars[:depth]
		if len(n.Pipe.Decl) == 1 {
			r.vars = append(r.vars, variable{n.Pipe.Decl[0].Ident[0], e})
		}
		if err := r.walk(e, n.List); err != nil {
			return err
		}
	}
	r.vars = r.vars[:depth]
	return nil
}

// pipe evaluates a pipeline of one command.
func (r *renderer) pipe(dot any, p *parse.PipeNode) (any, error) {
	if len(p.Cmds) != 1 {
		return nil, fmt.Errorf("%s: pipelines of %d commands are not supported", p, len(p.Cmds))
	}
	args := p.Cmds[0].Args
	if id, ok := args[0].(*parse.IdentifierNode); ok {
		vals := make([]any, len(args)-1)
		for i, a := range args[1:] {
			v, err := r.arg(dot, a)
			if err != nil {
				return nil, err
			}
			vals[i] = v
		}
		switch {
		case id.Ident == "not" && len(vals) == 1:
			t, err := truth(vals[0])
			return !t, err
		case id.Ident == "eq" && len(vals) == 2:
			return equal(vals[0], vals[1])
		}
		return nil, fmt.Errorf("%s: unsupported call", p)
	}
	if len(args) != 1 {
		return nil, fmt.Errorf("%s: unsupported command", p)
	}
	return r.arg(dot, args[0])
}

// arg evaluates one operand: a field of dot, a variable or its field, dot,
// or a number.
func (r *renderer) arg(dot any, n parse.Node) (any, error) {
	switch n := n.(type) {
	case *parse.DotNode:
		return dot, nil
	case *parse.FieldNode:
		return fieldChain(dot, n.Ident, n)
	case *parse.VariableNode:
		for i := len(r.vars) - 1; i >= 0; i-- {
			if r.vars[i].name == n.Ident[0] {
				return fieldChain(r.vars[i].value, n.Ident[1:], n)
			}
		}
		return nil, fmt.Errorf("%s: undefined variable", n)
	case *parse.NumberNode:
		if !n.IsInt {
			return nil, fmt.Errorf("%s: only integer constants are supported", n)
		}
		return int(n.Int64), nil
	}
	return nil, fmt.Errorf("%s: unsupported operand", n)
}

func fieldChain(v any, idents []string, n parse.Node) (any, error) {
	for _, id := range idents {
		f, ok := v.(fielder)
		if !ok {
			return nil, fmt.Errorf("%s: %T has no field %s", n, v, id)
		}
		if v, ok = f.field(id); !ok {
			return nil, fmt.Errorf("%s: no field %s in %T", n, id, f)
		}
	}
	return v, nil
}

// truth is text/template's truth for the kinds of value the data holds.
func truth(v any) (bool, error) {
	switch v := v.(type) {
	case bool:
		return v, nil
	case int:
		return v != 0, nil
	case string:
		return v != "", nil
	case []fielder:
		return len(v) > 0, nil
	}
	return false, fmt.Errorf("no truth value for %T", v)
}

func equal(a, b any) (bool, error) {
	switch a := a.(type) {
	case int:
		if b, ok := b.(int); ok {
			return a == b, nil
		}
	case string:
		if b, ok := b.(string); ok {
			return a == b, nil
		}
	case bool:
		if b, ok := b.(bool); ok {
			return a == b, nil
		}
	}
	return false, fmt.Errorf("eq of %T and %T", a, b)
}

// field is kernelData's fielder: every field a template may read.
func (d kernelData) field(name string) (any, bool) {
	switch name {
	case "Sig":
		return d.Sig.String(), true
	case "Name":
		return d.Name, true
	case "NS":
		return d.NS, true
	case "Version":
		return d.Version, true
	case "ND":
		return d.ND, true
	case "Fast":
		return d.Fast, true
	case "S":
		return d.S, true
	case "Vec":
		return d.Vec, true
	case "VB":
		return d.VB, true
	case "Align":
		return d.Align, true
	case "Words":
		return d.Words, true
	case "G":
		return d.G, true
	case "Idx":
		return d.Idx, true
	case "UIdx":
		return d.UIdx, true
	case "HasSrc":
		return d.HasSrc, true
	case "Args":
		return d.Args, true
	case "AParam":
		return d.AParam, true
	case "Const":
		return d.Const, true
	case "NT":
		return d.NT, true
	case "TR":
		return d.TR, true
	case "TC":
		return d.TC, true
	case "SWM":
		return d.SWM, true
	case "WordCols":
		return d.WordCols, true
	case "Staged":
		return d.Staged, true
	case "Pipe":
		return d.Pipe, true
	case "RW":
		return d.RW, true
	case "R":
		return d.R, true
	case "XU":
		return d.XU, true
	case "KE":
		return d.KE, true
	case "ElemStore":
		return d.ElemStore, true
	case "OverlapTables":
		return d.OverlapTables, true
	case "CalcOffsets":
		return d.CalcOffsets, true
	case "WordStore":
		return d.WordStore, true
	case "TripleStore":
		return d.TripleStore, true
	case "Pow2":
		return d.Pow2, true
	case "GW":
		return d.GW, true
	case "GWU":
		return d.GWU, true
	case "Gather":
		l := make([]fielder, len(d.Gather))
		for i, c := range d.Gather {
			l[i] = c
		}
		return l, true
	}
	return nil, false
}

func (c gatherCase) field(name string) (any, bool) {
	switch name {
	case "Case":
		return c.Case, true
	case "Granules":
		l := make([]fielder, len(c.Granules))
		for i, g := range c.Granules {
			l[i] = g
		}
		return l, true
	}
	return nil, false
}

func (g gatherGranule) field(name string) (any, bool) {
	switch name {
	case "Elem":
		return g.Elem, true
	case "Byte":
		return g.Byte, true
	case "Word":
		return g.Word, true
	case "Shift":
		return g.Shift, true
	}
	return nil, false
}
