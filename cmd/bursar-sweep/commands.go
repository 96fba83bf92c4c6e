package main

import "github.com/urfave/cli/v2"

// commands lists the subcommands in the order --help shows them.
func commands() []*cli.Command {
	cmds := []*cli.Command{withRunManifest(runCommand())}
	for _, s := range studies() {
		cmds = append(cmds, s.command())
	}
	return append(cmds, mergeCommand(), slurmScriptCommand())
}
