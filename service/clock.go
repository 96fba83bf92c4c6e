package service

import (
	"math"
	"sync/atomic"
	"time"
)

// clockWatch compares the ticks the ticker achieves with the ones --speed
// asks for, over windows of at least one wall-clock second and ten tick
// periods. A window that achieves less than 90 % of the asked rate is
// "behind": the ticker dropped ticks because a tick (with its fsync) took
// longer than its period. It runs in the ticker goroutine only.
type clockWatch struct {
	speed    float64
	window   time.Duration
	start    time.Time
	ticks    int
	lastWarn time.Time
	warned   bool
	now      time.Time
}

// behindRatio is the share of the asked rate below which a window counts
// as behind; warnEvery spaces the warnings out.
const (
	behindRatio = 0.9
	warnEvery   = 30 * time.Second
)

func newClockWatch(speed float64, now time.Time) *clockWatch {
	w := max(time.Second, time.Duration(10/speed*float64(time.Second)))
	return &clockWatch{speed: speed, window: w, start: now}
}

// tick counts one tick done at now. At the end of a window it returns the
// achieved rate and whether it was behind; otherwise rate is -1.
func (w *clockWatch) tick(now time.Time) (rate float64, behind bool) {
	w.ticks++
	w.now = now
	el := now.Sub(w.start)
	if el < w.window {
		return -1, false
	}
	rate = float64(w.ticks) / el.Seconds()
	w.start, w.ticks = now, 0
	return rate, rate < behindRatio*w.speed
}

func (w *clockWatch) shouldWarn() bool {
	if w.warned && w.now.Sub(w.lastWarn) < warnEvery {
		return false
	}
	w.warned, w.lastWarn = true, w.now
	return true
}

// clockStats are the clock's metrics.
type clockStats struct {
	rateBits      atomic.Uint64 // float64 bits: ticks per second over the last window
	behindWindows atomic.Int64  // windows that were behind
}

func (c *clockStats) observe(rate float64, behind bool) {
	c.rateBits.Store(math.Float64bits(rate))
	if behind {
		c.behindWindows.Add(1)
	}
}

func (c *clockStats) rate() float64 { return math.Float64frombits(c.rateBits.Load()) }
