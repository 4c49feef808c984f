package gen

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/stridekit/stridekit/layout"
)

// ParseSigs reads a signature file: one signature per line in the form of
// layout.Signature.String (e.g. "tile:nd=3,fast=0,item=4,vec=4,idx=32");
// blank lines and text after '#' are ignored. Errors name the file (name) and
// line, and wrap layout.ErrSignature or say which class has no kernel.
func ParseSigs(name string, r io.Reader) ([]layout.Signature, error) {
	var out []layout.Signature
	sc := bufio.NewScanner(r)
	for line := 1; sc.Scan(); line++ {
		text, _, _ := strings.Cut(sc.Text(), "#")
		text = strings.TrimSpace(text)
		if text == "" {
			continue
		}
		sig, err := layout.ParseSignature(text)
		if err == nil {
			err = Check(sig)
		}
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		out = append(out, sig)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return out, nil
}

// FormatSigs writes sigs in the form ParseSigs reads, one per line, under a
// comment header.
func FormatSigs(w io.Writer, header string, sigs []layout.Signature) error {
	var b strings.Builder
	for _, l := range strings.Split(header, "\n") {
		b.WriteString("# " + l + "\n")
	}
	for _, s := range sigs {
		b.WriteString(s.String() + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}
