package service

import (
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSpeedRange(t *testing.T) {
	for _, sp := range []float64{1e-11, 1e-4, -1, 100001, 1e300} {
		_, err := New(Options{Broker: testCfg(), Speed: sp, AdminToken: "0123456789abcdef0123"})
		require.Error(t, err, "speed %v", sp)
		assert.Contains(t, err.Error(), "speed must be between 0.001 and 100000", "speed %v", sp)
	}
	for _, sp := range []float64{0, MinSpeed, 1, MaxSpeed} {
		s, err := New(Options{Broker: testCfg(), Speed: sp, AdminToken: "0123456789abcdef0123"})
		require.NoError(t, err, "speed %v", sp)
		s.Close()
	}
}

// TestClockWatch: the window arithmetic on a hand-worked example.
func TestClockWatch(t *testing.T) {
	t0 := time.Unix(1000, 0)
	w := newClockWatch(100, t0) // window max(1 s, 10/100 s) = 1 s
	for i := 1; i < 80; i++ {
		rate, _ := w.tick(t0.Add(time.Duration(i) * 12 * time.Millisecond))
		require.Equal(t, -1.0, rate)
	}
	rate, behind := w.tick(t0.Add(80 * 12500 * time.Microsecond)) // 80 ticks in 1 s
	assert.InDelta(t, 80, rate, 1e-9)
	assert.True(t, behind, "80 of 100 is under 90 %")
	w2 := newClockWatch(0.5, t0) // window 20 s
	for i := 1; i <= 10; i++ {
		rate, behind = w2.tick(t0.Add(time.Duration(i) * 2 * time.Second))
	}
	assert.InDelta(t, 0.5, rate, 1e-9)
	assert.False(t, behind)
}

// TestClockFallsBehindWarns: ticks slower than their period are logged
// and counted.
func TestClockFallsBehindWarns(t *testing.T) {
	var mu sync.Mutex
	var logs strings.Builder
	h := slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return logs.Write(p)
	}), nil)
	s, err := New(Options{Broker: testCfg(), Speed: 1000, AdminToken: "0123456789abcdef0123", Logger: slog.New(h)})
	require.NoError(t, err)
	s.tickHook = func() { time.Sleep(4 * time.Millisecond) } // at most 250 ticks/s
	s.Start()
	require.Eventually(t, func() bool { return s.clock.behindWindows.Load() > 0 }, 10*time.Second, 50*time.Millisecond)
	require.NoError(t, s.Close())
	assert.Less(t, s.clock.rate(), 300.0)
	mu.Lock()
	defer mu.Unlock()
	assert.Contains(t, logs.String(), "falling behind")
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

var _ io.Writer = writerFunc(nil)
