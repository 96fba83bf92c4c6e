package tracestudy

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bursar-hpc/bursar/internal/stats"
)

// The trace figures' linear axes carry at least four labels: gonum's
// default gave three on the job counts (0, 2500, 5000) and on Jain's
// index (0, 0.4, 0.8); labelled with the shortest decimal.
func TestCleanTicksAreReadable(t *testing.T) {
	for _, c := range []struct {
		lo, hi float64
		want   []string
	}{
		{0, 5870, []string{"0", "1000", "2000", "3000", "4000", "5000"}},
		{0, 0.95, []string{"0", "0.25", "0.5", "0.75"}},
		{0, 0.36, []string{"0", "0.1", "0.2", "0.3"}},
		{-0.3, 5.5, []string{"0", "1", "2", "3", "4", "5"}},
	} {
		var got []string
		for _, tk := range (cleanTicks{}).Ticks(c.lo, c.hi) {
			if tk.Label != "" {
				got = append(got, tk.Label)
			}
		}
		require.Equal(t, c.want, got, "[%g, %g]", c.lo, c.hi)
	}
}

// The mean-wait panel of the full-log window figures goes log (its means
// spread over 3.7 … 75 h, more than 30×): its axis, from 10^(0 − 0.3) =
// 0.501 h (0.3 of a decade under the smallest mean's decade) to twice the
// highest interval end, 300 h, was labelled only 1, 10 and 100; now 1, 2
// and 5 times each power of ten.
func TestLogBarsAreReadable(t *testing.T) {
	h := 3600.0
	ivs := []Interval{
		{Mean: 75 * h, Interval: stats.Interval{Lo: -10 * h, Hi: 150 * h}, N: 4}, {Mean: 4 * h, Interval: stats.Interval{Lo: 0.5 * h, Hi: 7.7 * h}, N: 4},
		{Mean: 3.7 * h, Interval: stats.Interval{Lo: 0.7 * h, Hi: 6.6 * h}, N: 4}, {Mean: 14 * h, Interval: stats.Interval{Lo: 1.1 * h, Hi: 27 * h}, N: 4},
	}
	p, _, err := ivBars("Mean wait", "hours", []string{"bursar", "fifo", "priority", "static"}, ivs, 1/h, 0, math.Inf(1))
	require.NoError(t, err)
	require.Equal(t, "hours (log scale)", p.Y.Label.Text)
	var got []string
	for _, tk := range p.Y.Tick.Marker.Ticks(p.Y.Min, p.Y.Max) {
		if tk.Label != "" {
			got = append(got, tk.Label)
		}
	}
	require.Equal(t, []string{"1", "2", "5", "10", "20", "50", "100", "200"}, got, "[%g, %g]", p.Y.Min, p.Y.Max)
}
