package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A mistyped command or flag names the nearest real one, a bad value names
// the flag and what it takes, and none of them dumps the help.
func TestUsageErrorsAreOneLine(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"papr"}, `unknown command "papr"; did you mean "paper"?`},
		{[]string{"latency"}, `unknown command "latency"; did you mean "latency-price"?`},
		{[]string{"paper", "--quik"}, `paper: unknown flag --quik; did you mean --quick? (bursar-sweep paper --help lists the flags)`},
		{[]string{"run", "--storm-bucker", "5"}, `run: unknown flag --storm-bucker; did you mean --storm-bucket?`},
		{[]string{"paper", "--workers", "all"}, `paper: --workers "all" is not an integer — N runs at once`},
		{[]string{"run", "--grace", "1.5"}, `run: --grace "1.5" is not an integer — preemption grace period, s`},
		{[]string{"run", "--sci-rate", "lots"}, `run: --sci-rate "lots" is not a number`},
		{[]string{"run", "--probe=maybe"}, `run: --probe "maybe" is not true or false`},
		{[]string{"sweep", "--config"}, `sweep: --config needs a value`},
		{[]string{"paper", "--format", "gif"}, `--format`},
		{[]string{"paper", "--workers", "0"}, `--workers must be at least 1`},
	} {
		console, err := runSweepApp(t, tc.args...)
		require.Error(t, err, tc.args)
		assert.Contains(t, err.Error(), tc.want, tc.args)
		assert.NotContains(t, console, "USAGE", "no help dump for %v", tc.args)
	}
}
