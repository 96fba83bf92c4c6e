package main

import (
	"fmt"
	"os"

	"github.com/bursar-hpc/bursar/internal/cliusage"
	"github.com/bursar-hpc/bursar/internal/interrupt"
	"github.com/bursar-hpc/bursar/internal/manifest"
	"github.com/urfave/cli/v2"
)

func main() {
	app := newApp()
	cliusage.Apply(app)
	// 130 after Ctrl-C (143 after SIGTERM) for a command that fails on
	// it, so that a script can tell it from a failure; cli.Exit's code
	// (demo's) goes through the same rule.
	cli.OsExiter = func(code int) { os.Exit(interrupt.Status(code)) }
	if err := app.Run(nameFirst(os.Args)); err != nil {
		fmt.Fprintln(os.Stderr, "bursar:", err)
		os.Exit(interrupt.Status(1))
	}
}

func newApp() *cli.App {
	return &cli.App{
		Name: "bursar",
		// --version: the module version and VCS revision the build recorded
		// (make build stamps them even under GOFLAGS=-buildvcs=false).
		Version: manifest.VersionLine("bursar"),
		Usage:   "serve the Bursar GPU broker over HTTP, and negotiate with it",
		Description: "Bursar meters how fast autonomous agent campaigns may consume a shared GPU pool. Each\n" +
			"campaign holds an envelope: a guarantee, a sustained rate R and a token bucket B that lets it\n" +
			"burst above R until the bucket runs dry, a service class, a credit budget, and the same bucket\n" +
			"semantics for filesystem bandwidth and inference.\n\n" +
			"'serve' runs the broker as a service that agents negotiate with over a REST API (described\n" +
			"at /openapi.json). 'demo' is such an agent: it registers a campaign, reads its supply,\n" +
			"requests GPUs, waits for the grant, meters io and inference, sees itself throttled and\n" +
			"releases. 'demo --selftest' does all of that against a private in-process server and exits\n" +
			"non-zero on any deviation.\n\n" +
			"Quick start (two terminals):\n\n" +
			"   head -c 24 /dev/urandom | base64 > admin.token && chmod 600 admin.token\n" +
			"   bursar serve --admin-token-file admin.token --data-dir ./bursar-data\n" +
			"   bursar demo  --admin-token-file admin.token\n\n" +
			"Or, with nothing to set up:  bursar demo --selftest",
		EnableBashCompletion: true,
		Commands:             []*cli.Command{serveCommand(), demoCommand(), leaseCommand(), leaseWatchdogCommand(), campaignCommand(), journalCommand(), slurmCommand()},
	}
}
