package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/stridekit/stridekit/gen"
	"github.com/stridekit/stridekit/layout"
)

// This file reads and rewrites the tuning table (gen/tuning.txt, whose
// header documents the format): the knobs an entry sets, the lookup that
// gives a signature's knobs, and the rewrite that replaces one
// architecture's entries and keeps everything else.

// errTable is wrapped by errors about a tuning table the tuner cannot read
// or write.
var errTable = errors.New("tuning table")

// knobValue returns the knob of k named name (wordcols as 0 or 1; 0 for
// a name gen does not know).
func knobValue(k gen.Knobs, name string) int {
	v, _ := k.Get(name)
	return v
}

// archName is the table's spelling of a compute capability: sm_90, or
// "any" for 0.
func archName(arch int) string {
	if arch == 0 {
		return "any"
	}
	return "sm_" + strconv.Itoa(arch)
}

func starOr(v int) string {
	if v == 0 {
		return "*"
	}
	return strconv.Itoa(v)
}

// entryKey is what an entry applies to: its class, item size and vector
// width (0: *).
type entryKey struct {
	Class     layout.Class
	Item, Vec int
}

func keyOf(e gen.TuningEntry) entryKey { return entryKey{e.Class, e.Item, e.Vec} }

// formatEntry writes an entry as a table line, its knobs in the header's
// order (gen.KnobNames).
func formatEntry(e gen.TuningEntry) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %s %s", archName(e.Arch), e.Class, starOr(e.Item), starOr(e.Vec))
	for _, name := range gen.KnobNames() {
		if v, ok := e.Set[name]; ok {
			fmt.Fprintf(&b, " %s=%d", name, v)
		}
	}
	return b.String()
}

// entryArch returns the arch field of a table line that holds an entry,
// and whether it holds one.
func entryArch(line string) (string, bool) {
	text, _, _ := strings.Cut(line, "#")
	f := strings.Fields(text)
	if len(f) == 0 {
		return "", false
	}
	return f[0], true
}

// blockPrefix starts each comment line the tuner writes above an arch's
// entries ("# sm_90: "), so a rewrite finds and replaces them.
func blockPrefix(arch int) string { return "# " + archName(arch) + ": " }

// rewriteTuning returns the table text old with the entries of arch
// replaced: every entry line of arch, and every comment line the tuner
// wrote for it (starting with blockPrefix), is removed; in their place (at
// the first removed line, else at the end after a blank line) come the
// comment lines of note, each prefixed with blockPrefix, then entries, then
// the old entries of arch whose class, item and vector width no new entry
// has (kept as they were). Everything else (the header, other comments, the
// "any" heuristic and other architectures) is kept byte for byte. Both the
// old and the new text must parse (gen.ParseTuning); entries must be of
// arch, a real architecture, with distinct keys.
func rewriteTuning(old string, arch int, note []string, entries []gen.TuningEntry) (string, error) {
	if arch <= 0 {
		return "", fmt.Errorf("%w: cannot rewrite the entries of arch %d (want a compute capability such as 90)", errTable, arch)
	}
	if _, err := gen.ParseTuning("old table", strings.NewReader(old)); err != nil {
		return "", fmt.Errorf("%w: %w", errTable, err)
	}
	name := archName(arch)
	newKeys := map[entryKey]bool{}
	for _, e := range entries {
		if e.Arch != arch {
			return "", fmt.Errorf("%w: entry %q is not of %s", errTable, formatEntry(e), name)
		}
		if newKeys[keyOf(e)] {
			return "", fmt.Errorf("%w: two entries for %s %s %s %s", errTable, name, e.Class, starOr(e.Item), starOr(e.Vec))
		}
		newKeys[keyOf(e)] = true
	}
	lines := strings.Split(strings.TrimSuffix(old, "\n"), "\n")
	if old == "" {
		lines = nil
	}
	var kept, carried []string
	at := -1
	prefix := strings.TrimSpace(blockPrefix(arch))
	for _, line := range lines {
		a, isEntry := entryArch(line)
		switch {
		case isEntry && a == name:
			es, err := gen.ParseTuning("old entry", strings.NewReader(line))
			if err != nil || len(es) != 1 {
				return "", fmt.Errorf("%w: line %q: %v", errTable, line, err)
			}
			if !newKeys[keyOf(es[0])] {
				carried = append(carried, line)
			}
		case !isEntry && strings.HasPrefix(strings.TrimSpace(line), prefix):
		default:
			kept = append(kept, line)
			continue
		}
		if at < 0 {
			at = len(kept)
		}
	}
	var block []string
	for _, n := range note {
		block = append(block, strings.TrimRight(blockPrefix(arch)+n, " "))
	}
	for _, e := range entries {
		block = append(block, formatEntry(e))
	}
	block = append(block, carried...)
	var out []string
	if at < 0 {
		out = append(out, kept...)
		if len(out) > 0 && strings.TrimSpace(out[len(out)-1]) != "" {
			out = append(out, "")
		}
		out = append(out, block...)
	} else {
		out = append(out, kept[:at]...)
		out = append(out, block...)
		out = append(out, kept[at:]...)
	}
	text := strings.Join(out, "\n") + "\n"
	if _, err := gen.ParseTuning("new table", strings.NewReader(text)); err != nil {
		return "", fmt.Errorf("%w: the rewritten table does not parse: %w", errTable, err)
	}
	return text, nil
}

// readTable returns the tuning table at path, or the table compiled into
// the binary (gen.TuningTable) when path does not exist, and which it was.
func readTable(path string) (text, from string, err error) {
	data, err := os.ReadFile(path)
	switch {
	case err == nil:
		return string(data), path, nil
	case errors.Is(err, os.ErrNotExist):
		return gen.TuningTable(), "the table compiled into stridebench", nil
	}
	return "", "", fmt.Errorf("%w: %w", errTable, err)
}

// writeTable writes text to path through a temporary file in the same
// directory, renamed into place, so a reader never sees half a table.
func writeTable(path, text string) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, ".tuning-*.txt")
	if err != nil {
		return fmt.Errorf("%w: %w", errTable, err)
	}
	_, err = f.WriteString(text)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("%w: writing %s: %w", errTable, path, err)
	}
	return nil
}
