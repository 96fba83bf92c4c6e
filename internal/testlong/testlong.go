// Package testlong gates the long tests: exhaustive replays (tick by tick
// against event skipping, every policy over the committed excerpt) and the
// findings checks that replay a study. They run only when BURSAR_LONG=1,
// so that the README's test command, `go test -race -timeout 30m ./...`, stays within
// minutes on two cores; .ci/run runs them with BURSAR_LONG=1 in a plain
// build (they are pure single-goroutine replays: the race detector has
// nothing to check in them and makes them ten to fifteen times slower).
//
// Only tests import it.
package testlong

import (
	"os"
	"testing"
)

// Env is the variable that turns the long tests on.
const Env = "BURSAR_LONG"

// Enabled reports whether the long tests run (BURSAR_LONG=1).
func Enabled() bool { return os.Getenv(Env) == "1" }

// Skip skips t unless the long tests are on; what says what the test
// replays, for the skip message.
func Skip(t testing.TB, what string) {
	t.Helper()
	if !Enabled() {
		t.Skipf("long test (%s): run with %s=1 (.ci/run does)", what, Env)
	}
}
