package main

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"strings"
)

// caseNotes are the explanations a person writes for the cases a report
// lists as short of its threshold, read from the file of
// "stridebench report -notes". The file survives regeneration of the record,
// so the explanations are kept with the figures they explain.
//
// The file's format: lines before the first "match" line are a preamble,
// printed above the table; "match REGEXP" starts a rule, whose note is the
// text of the lines that follow it up to the next "match" line. A case takes
// the note of the first rule whose expression matches its name, its
// signature or its case line. Lines starting with "#" are comments.
type caseNotes struct {
	preamble string
	rules    []noteRule
}

type noteRule struct {
	re   *regexp.Regexp
	note string
}

// readNotes parses a notes file; name is used in errors.
func readNotes(name string, r io.Reader) (*caseNotes, error) {
	n := &caseNotes{}
	var pre, cur []string
	flush := func() {
		if len(n.rules) > 0 {
			n.rules[len(n.rules)-1].note = strings.Join(strings.Fields(strings.Join(cur, " ")), " ")
		}
		cur = nil
	}
	sc := bufio.NewScanner(r)
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		switch {
		case strings.HasPrefix(text, "#"):
			continue
		case text == "match" || strings.HasPrefix(text, "match "):
			flush()
			expr := strings.TrimSpace(strings.TrimPrefix(text, "match"))
			if expr == "" {
				return nil, fmt.Errorf("%s:%d: match: no expression", name, line)
			}
			re, err := regexp.Compile(expr)
			if err != nil {
				return nil, fmt.Errorf("%s:%d: match %q: %w", name, line, expr, err)
			}
			n.rules = append(n.rules, noteRule{re: re})
		case len(n.rules) == 0:
			pre = append(pre, text)
		default:
			cur = append(cur, text)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	flush()
	for i, r := range n.rules {
		if r.note == "" {
			return nil, fmt.Errorf("%s: match %q (rule %d): no note", name, r.re, i+1)
		}
	}
	n.preamble = strings.TrimSpace(strings.Join(pre, "\n"))
	return n, nil
}

// noteFor returns the note of the first rule matching r, or "".
func (n *caseNotes) noteFor(r *result) string {
	if n == nil {
		return ""
	}
	for _, rule := range n.rules {
		if rule.re.MatchString(r.Name) || rule.re.MatchString(r.Signature) || rule.re.MatchString(r.Case) {
			return rule.note
		}
	}
	return ""
}
