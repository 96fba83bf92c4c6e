package main

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestVersionFlag: --version names the program, its module version (or
// "(devel)"), the VCS revision or how to get one stamped, and the Go
// toolchain (internal/manifest.VersionLine, shared with bursar-sweep).
func TestVersionFlag(t *testing.T) {
	out, _, code := run(t, cleanEnv(), "--version")
	require.Equal(t, 0, code)
	require.Regexp(t, `^bursar version \S+, (revision [0-9a-f]+|no VCS revision \(build with `+"`make build`"+`, which stamps it\))`, out)
	require.Contains(t, out, runtime.Version())
}
