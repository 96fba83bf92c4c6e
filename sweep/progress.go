package sweep

import (
	"fmt"
	"io"
	"time"

	"github.com/schollz/progressbar/v3"
)

// Progress reports a sweep's advance on a writer (stderr): a live bar on a
// terminal, and on anything else (a CI log, a file) a plain line at most
// every Every, so that logs stay short and free of control characters.
type Progress struct {
	w     io.Writer
	label string
	bar   *progressbar.ProgressBar
	start time.Time
	// Every is the least time between two plain lines.
	Every time.Duration
	last  time.Time
	now   func() time.Time
}

// NewProgress starts a report on w for a sweep called label (the
// experiment). terminal chooses the bar.
func NewProgress(w io.Writer, terminal bool, label string, total int) *Progress {
	p := &Progress{w: w, label: label, Every: 2 * time.Second, now: time.Now}
	p.start = p.now()
	p.last = p.start
	if terminal {
		p.bar = progressbar.NewOptions(total,
			progressbar.OptionSetWriter(w),
			progressbar.OptionSetDescription(label),
			progressbar.OptionShowCount(),
			progressbar.OptionSetItsString("runs"),
			progressbar.OptionShowIts(),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionClearOnFinish(),
		)
	}
	return p
}

// Update is an Options.Progress callback.
func (p *Progress) Update(done, total int) {
	if p.bar != nil {
		_ = p.bar.Set(done)
		return
	}
	t := p.now()
	if done < total && t.Sub(p.last) < p.Every {
		return
	}
	p.last = t
	fmt.Fprintf(p.w, "%s: %d/%d runs (%d%%), %.1f s\n", p.label, done, total, 100*done/max(total, 1), t.Sub(p.start).Seconds())
}

// Finish ends the report of a complete sweep (the plain lines need no
// ending).
func (p *Progress) Finish() {
	if p.bar != nil {
		_ = p.bar.Finish()
	}
}

// Abandon ends the report of an interrupted or failed sweep, leaving the
// bar where it stopped rather than filling it.
func (p *Progress) Abandon() {
	if p.bar != nil {
		_ = p.bar.Exit()
		fmt.Fprintln(p.w)
	}
}
