package slurmcheck

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Worked by hand: the cycles fall at .3 of each second early on and at
// .8 later, as the two starts say (each start is at a cycle; the phase
// around an instant is that of the start nearest to it).
//
// Job 1: submitted at 0.1 (nearest start 0.3: phase .3, first cycle
// after it ⌈0.1 − .3⌉ = 0), started at 0.3 (cycle 0), done at 5.5
// (nearest start 5.8: phase .8, ⌈4.7⌉ = cycle 5): a run of 5 cycles.
// Job 2: submitted at 2.25 (nearest start 0.3: ⌈1.95⌉ = cycle 2),
// started at 5.8 (cycle 5: it waited 3), done at 9.85 (nearest start
// 5.8: ⌈9.05⌉ = cycle 10): 5 cycles.
func TestOnCyclesWorkedByHand(t *testing.T) {
	obs := []Observed{
		{SubmitAt: 0.1, StartAt: 0.3, EndAt: 5.5},
		{SubmitAt: 2.25, StartAt: 5.8, EndAt: 9.85},
	}
	require.Equal(t, []Cycled{{Submit: 0, Start: 0, Run: 5}, {Submit: 2, Start: 5, Run: 5}}, OnCycles(obs))
	require.Equal(t, []Times{{0, 0}, {2, 5}}, Real(OnCycles(obs)))
}

// A job is never on the cycles before it was submitted, nor did it run
// for less than one cycle.
func TestOnCyclesStartsAfterSubmit(t *testing.T) {
	obs := []Observed{
		{SubmitAt: 3.95, StartAt: 4.01, EndAt: 4.02},
		{SubmitAt: 1.0, StartAt: 4.9, EndAt: 7.2},
	}
	for _, c := range OnCycles(obs) {
		require.LessOrEqual(t, c.Submit, c.Start)
		require.GreaterOrEqual(t, c.Run, int64(1))
	}
}
