package main

import (
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// progress is the progress bar on stderr; a nil *progress shows nothing.
type progress struct{ bar *progressbar.ProgressBar }

// newProgress returns a bar of total steps on w, or nil when quiet is set or
// w is not a terminal.
func newProgress(w io.Writer, total int, quiet bool) *progress {
	f, ok := w.(*os.File)
	if quiet || !ok || !term.IsTerminal(int(f.Fd())) || total <= 0 {
		return nil
	}
	return &progress{bar: progressbar.NewOptions(total,
		progressbar.OptionSetWriter(w),
		progressbar.OptionShowCount(),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionFullWidth(),
	)}
}

// step advances the bar by one and shows what runs next.
func (p *progress) step(desc string) {
	if p == nil {
		return
	}
	p.bar.Describe(desc)
	_ = p.bar.Add(1)
}

// describe shows what runs now.
func (p *progress) describe(desc string) {
	if p != nil {
		p.bar.Describe(desc)
	}
}

// done removes the bar.
func (p *progress) done() {
	if p != nil {
		_ = p.bar.Finish()
	}
}
