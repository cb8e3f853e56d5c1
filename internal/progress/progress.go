// Package progress reports the progress of long-running commands on stderr.
// On a terminal it draws a bar (schollz/progressbar); elsewhere (CI logs,
// pipes) it prints a plain line at most every few seconds so logs stay short.
package progress

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// Bar counts units of work towards a total. It is safe for concurrent use.
// A nil *Bar is valid and reports nothing.
type Bar struct {
	mu      sync.Mutex
	bar     *progressbar.ProgressBar
	w       io.Writer
	desc    string
	total   int64
	done    int64
	unit    string
	started time.Time
	lastOut time.Time
	now     func() time.Time
}

// New starts a bar over total units written to w. unit names the units
// ("rows", "bytes"); bytes are shown human-readably on a terminal. now is the
// clock used for throttling and elapsed times (the CLI passes time.Now; the
// clock is injected so that library code stays free of wall-clock reads).
// If w is nil or io.Discard, or now is nil, the bar reports nothing.
func New(w io.Writer, desc string, total int64, unit string, now func() time.Time) *Bar {
	if w == nil || w == io.Discard || now == nil {
		return nil
	}
	b := &Bar{w: w, desc: desc, total: total, unit: unit, now: now}
	b.started = b.now()
	b.lastOut = b.started
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		opts := []progressbar.Option{
			progressbar.OptionSetWriter(w),
			progressbar.OptionSetDescription(desc),
			progressbar.OptionShowCount(),
			progressbar.OptionSetWidth(30),
			progressbar.OptionThrottle(100 * time.Millisecond),
			progressbar.OptionShowElapsedTimeOnFinish(),
			progressbar.OptionOnCompletion(func() { fmt.Fprintln(w) }),
		}
		if unit == "bytes" {
			opts = append(opts, progressbar.OptionShowBytes(true))
		} else {
			opts = append(opts, progressbar.OptionSetItsString(unit))
		}
		b.bar = progressbar.NewOptions64(total, opts...)
	}
	return b
}

// Add records n more units done.
func (b *Bar) Add(n int64) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.done += n
	if b.bar != nil {
		_ = b.bar.Add64(n)
		return
	}
	if t := b.now(); t.Sub(b.lastOut) >= 5*time.Second {
		b.lastOut = t
		elapsed := t.Sub(b.started)
		eta := "ETA unknown"
		if b.done > 0 && b.total > b.done {
			// Linear extrapolation of the rate so far.
			left := time.Duration(float64(elapsed) * float64(b.total-b.done) / float64(b.done))
			eta = "ETA " + left.Round(time.Second).String()
		}
		fmt.Fprintf(b.w, "%s: %d/%d %s (%.0f%%, %s elapsed, %s)\n", b.desc, b.done, b.total, b.unit,
			100*float64(b.done)/float64(max(b.total, 1)), elapsed.Round(time.Second), eta)
	}
}

// Finish marks the work complete.
func (b *Bar) Finish() {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.bar != nil {
		_ = b.bar.Finish()
		return
	}
	if d := b.now().Sub(b.started); d >= 2*time.Second {
		fmt.Fprintf(b.w, "%s: done, %d %s in %s\n", b.desc, b.done, b.unit, d.Round(100*time.Millisecond))
	}
}
