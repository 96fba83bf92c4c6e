package sweep

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// Progress reports a sweep's advance on a writer (stderr): a live bar on a
// terminal, and on anything else (a CI log, a file) a plain line at most
// every Every, so that logs stay short and free of control characters.
//
// The bar is drawn here, one line rewritten after a carriage return: the
// library it replaced imported net/http, and with it crypto/tls and the
// cgo resolver, some seventy packages of a cold build for one line of
// text.
type Progress struct {
	w     io.Writer
	label string
	bar   bool
	start time.Time
	// Every is the least time between two plain lines.
	Every time.Duration
	last  time.Time
	now   func() time.Time
	// drawn is the width of the bar's line on the terminal (0 none), drew
	// when it was last drawn.
	drawn int
	drew  time.Time
}

// barRedraw is the least time between two redraws of the bar.
const barRedraw = 100 * time.Millisecond

// barWidth is the bar's length in characters.
const barWidth = 30

// NewProgress starts a report on w for a sweep called label (the
// experiment). terminal chooses the bar.
func NewProgress(w io.Writer, terminal bool, label string, total int) *Progress {
	p := &Progress{w: w, label: label, bar: terminal, Every: 2 * time.Second, now: time.Now}
	p.start = p.now()
	p.last = p.start
	if terminal {
		p.draw(0, total, p.start)
	}
	return p
}

// Update is an Options.Progress callback.
func (p *Progress) Update(done, total int) {
	t := p.now()
	if p.bar {
		if done < total && t.Sub(p.drew) < barRedraw {
			return
		}
		p.draw(done, total, t)
		return
	}
	if done < total && t.Sub(p.last) < p.Every {
		return
	}
	p.last = t
	fmt.Fprintf(p.w, "%s: %d/%d runs (%d%%), %.1f s\n", p.label, done, total, 100*done/max(total, 1), t.Sub(p.start).Seconds())
}

// draw rewrites the bar's line: "paper  40% [============          ]
// 4/10 runs, 2.0 runs/s, 3 s left".
func (p *Progress) draw(done, total int, t time.Time) {
	frac := float64(done) / float64(max(total, 1))
	fill := min(barWidth, int(frac*barWidth))
	line := fmt.Sprintf("%s %3d%% [%s%s] %d/%d runs", p.label, int(100*frac), strings.Repeat("=", fill), strings.Repeat(" ", barWidth-fill), done, total)
	if el := t.Sub(p.start).Seconds(); done > 0 && el > 0 {
		rate := float64(done) / el
		line += fmt.Sprintf(", %.1f runs/s", rate)
		if done < total {
			line += fmt.Sprintf(", %.0f s left", float64(total-done)/rate)
		}
	}
	// Spaces over what is left of a longer line drawn before.
	pad := max(0, p.drawn-len(line))
	fmt.Fprintf(p.w, "\r%s%s", line, strings.Repeat(" ", pad))
	p.drawn, p.drew = len(line), t
}

// Finish ends the report of a complete sweep: the bar is cleared (the
// plain lines need no ending).
func (p *Progress) Finish() {
	if p.bar && p.drawn > 0 {
		fmt.Fprintf(p.w, "\r%s\r", strings.Repeat(" ", p.drawn))
		p.drawn = 0
	}
}

// Abandon ends the report of an interrupted or failed sweep, leaving the
// bar where it stopped rather than clearing it.
func (p *Progress) Abandon() {
	if p.bar && p.drawn > 0 {
		fmt.Fprintln(p.w)
		p.drawn = 0
	}
}
