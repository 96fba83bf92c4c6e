package main

import (
	"testing"

	"github.com/bursar-hpc/bursar/internal/cmdimports"
)

// wiringImports are the repository packages the command line may import,
// each for the flags it wires: the logic of a study lives in its package
// (docs/contributing.md), so a new import here is a question to ask of
// the change that adds it.
var wiringImports = []string{
	"arrive",              // agents-arrive: arrive.FromConfig and its flags' defaults
	"configs",             // the sweeps' configs, --seeds, the scenario file of run
	"engine",              // run: one scenario, its knob flags
	"figures",             // --format
	"internal/atomicfile", // run's outputs
	"internal/cliusage",   // usage errors
	"internal/interrupt",  // Ctrl-C: cancel the runs, exit 130
	"internal/k8sjob",     // slurm-script --k8s
	"internal/manifest",   // manifest.json, --version
	"internal/outlock",    // one command at a time into --out
	"internal/slurmjob",   // slurm-script
	"slurmcheck",          // validate-slurm
	"story",               // story: the lab's study (story.NewStudy) and its flags
	"policy/policies",     // the registry the command line runs with, its names in --policies' help
	"policy/registry",     // newApp(reg): the app built from a registry
	"replay",              // run's report.html
	"sweep",               // the one runner, the sweeps' setup
	"trace",               // --fair-sample's default
	"tracestudy",          // trace, budget-knobs: tracestudy.FromConfig
}

// TestImportsAreWiring: the command imports no package of the module
// beyond wiringImports (internal/cmdimports), so that a study's setup
// cannot creep back into cmd/ unnoticed.
func TestImportsAreWiring(t *testing.T) {
	cmdimports.Check(t, ".", wiringImports...)
}
