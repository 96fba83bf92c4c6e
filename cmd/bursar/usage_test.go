package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A mistyped command or flag names the nearest real one, a bad value names
// the flag and what it takes, and none of them dumps the help.
func TestUsageErrorsAreOneLine(t *testing.T) {
	env := cleanEnv()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"serv"}, `bursar: unknown command "serv"; did you mean "serve"?`},
		{[]string{"demo", "--selftst"}, `bursar: demo: unknown flag --selftst; did you mean --selftest?`},
		{[]string{"serve", "--pool", "many"}, `bursar: serve: --pool "many" is not an integer — GPUs in the pool`},
		{[]string{"serve", "--speed", "fast"}, `bursar: serve: --speed "fast" is not a number`},
	} {
		stdout, stderr, code := run(t, env, tc.args...)
		require.Equal(t, 1, code, "%v: %s%s", tc.args, stdout, stderr)
		assert.Contains(t, stderr, tc.want, tc.args)
		assert.NotContains(t, stdout+stderr, "USAGE", "no help dump for %v", tc.args)
	}
}
