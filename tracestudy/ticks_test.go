package tracestudy

import (
	"testing"

	"github.com/stretchr/testify/require"
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
