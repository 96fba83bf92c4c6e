// Command bursar-sweep runs the Bursar simulation: one scenario (run) or the
// paper's parameter sweeps, with their figures.
package main

import (
	"fmt"
	"os"

	"github.com/bursar-hpc/bursar/internal/cliusage"
	"github.com/urfave/cli/v2"
)

func main() {
	if err := newApp().Run(os.Args); err != nil {
		fmt.Fprintln(os.Stderr, "bursar-sweep:", err)
		os.Exit(1)
	}
}

func newApp() *cli.App {
	app := &cli.App{
		Name:  "bursar-sweep",
		Usage: "simulate agent campaigns metered by the Bursar broker on a shared GPU pool",
		Description: "Bursar meters how fast autonomous agent campaigns may consume a shared HPC machine:\n" +
			"each campaign holds an envelope (a guarantee, a sustained rate R and a token bucket B).\n" +
			"'run' simulates the published five-campaign scenario once and prints its report;\n" +
			"the experiment commands sweep its knobs over seeds and draw the paper's figures.",
		EnableBashCompletion: true,
		Commands:             commands(),
	}
	cliusage.Apply(app)
	return app
}
