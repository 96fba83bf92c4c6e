package main

import "github.com/urfave/cli/v2"

// commands lists the subcommands in the order --help shows them.
func commands() []*cli.Command {
	cmds := append([]*cli.Command{withRunManifest(runCommand())}, experimentCommands()...)
	cmds = append(cmds, traceCommands()...)
	cmds = append(cmds, arriveCommand())
	return append(cmds, mergeCommand(), slurmScriptCommand())
}
