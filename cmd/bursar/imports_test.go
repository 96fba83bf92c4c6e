package main

import (
	"testing"

	"github.com/bursar-hpc/bursar/internal/cmdimports"
)

// TestImportsAreWiring: bursar reads flags and calls the packages that do
// the work (issue 36 item 6). These are all the module's packages it may
// import; the enforcer, the lease loop, the demo and the listener live in
// them, not here.
func TestImportsAreWiring(t *testing.T) {
	cmdimports.Check(t, ".",
		"client", "demo", "lease", "policy", "service", "slurmgate",
		"internal/cliusage", "internal/interrupt", "internal/manifest", "internal/slurmtoken")
}
