package main

import (
	"github.com/bursar-hpc/bursar/policy/registry"
	"github.com/urfave/cli/v2"
)

// commands lists the subcommands in the order --help shows them.
func commands(reg *registry.Registry) []*cli.Command {
	cmds := []*cli.Command{withRunManifest(runCommand(reg))}
	for _, s := range studies() {
		cmds = append(cmds, s.command())
	}
	return append(cmds, mergeCommand(), slurmScriptCommand(), validateSlurmCommand())
}
