package main

import (
	"testing"

	"github.com/bursar-hpc/bursar/internal/cmdimports"
)

// TestImportsAreWiring: bursar-slurm-check is the token check alone, and
// small so that it starts fast inside slurmctld: it may import the token
// package and nothing else of the module.
func TestImportsAreWiring(t *testing.T) {
	cmdimports.Check(t, ".", "internal/slurmtoken")
}
