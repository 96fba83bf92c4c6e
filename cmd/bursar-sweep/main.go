// Command bursar-sweep runs the Bursar simulation: one scenario (run) or the
// paper's parameter sweeps, with their figures.
package main

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"

	"github.com/bursar-hpc/bursar/configs"
	"github.com/bursar-hpc/bursar/internal/cliusage"
	"github.com/bursar-hpc/bursar/internal/interrupt"
	"github.com/bursar-hpc/bursar/internal/manifest"
	"github.com/bursar-hpc/bursar/policy/policies"
	"github.com/bursar-hpc/bursar/policy/registry"
	"github.com/urfave/cli/v2"
)

func main() {
	if err := newApp(policies.Default).Run(os.Args); err != nil {
		fmt.Fprintln(os.Stderr, "bursar-sweep:", err)
		// 130 after Ctrl-C, so that a script can tell it from a failure.
		os.Exit(interrupt.Status(1))
	}
}

// newApp is the command line with the policies of reg: every policy name
// a flag or a config gives is found there (a test adds a policy of its
// own with registry.Registry.With).
func newApp(reg *registry.Registry) *cli.App {
	app := &cli.App{
		Metadata: map[string]any{policiesKey: reg},
		Name:     "bursar-sweep",
		// --version: the module version and VCS revision the build recorded
		// (make build stamps them even under GOFLAGS=-buildvcs=false).
		Version: manifest.VersionLine("bursar-sweep"),
		Usage:   "simulate agent campaigns metered by the Bursar broker on a shared GPU pool",
		Description: "Bursar meters how fast autonomous agent campaigns may consume a shared HPC machine:\n" +
			"each campaign holds an envelope (a guarantee, a sustained rate R and a token bucket B).\n" +
			"'run' simulates the published five-campaign scenario once and prints its report;\n" +
			"the experiment commands sweep its knobs over seeds and draw the paper's figures.",
		EnableBashCompletion: true,
		Commands:             commands(reg),
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "cpuprofile", Usage: "write a CPU profile of the whole command to `FILE` (go tool pprof reads it)"},
			&cli.StringFlag{Name: "memprofile", Usage: "write a memory profile of the whole command to `FILE` when it ends: every allocation's bytes (-sample_index=alloc_space) and what is still in use"},
		},
	}
	var prof *os.File
	var memprof string
	app.Before = func(c *cli.Context) error {
		memprof = c.String("memprofile")
		path := c.String("cpuprofile")
		if path == "" {
			return nil
		}
		f, err := os.Create(path)
		if err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return fmt.Errorf("--cpuprofile %s: %w", path, err)
		}
		prof = f
		return nil
	}
	app.After = func(*cli.Context) error {
		var err error
		if prof != nil {
			pprof.StopCPUProfile()
			err = prof.Close()
			prof = nil
		}
		if memprof != "" {
			err = errors.Join(err, writeMemProfile(memprof))
			memprof = ""
		}
		return err
	}
	cliusage.Apply(app)
	return app
}

// writeMemProfile writes the heap profile of the whole command to path
// (--memprofile): the bytes every call site allocated since the start and,
// after a collection, what is still in use.
func writeMemProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("--memprofile: %w", err)
	}
	runtime.GC()
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		f.Close()
		return fmt.Errorf("--memprofile %s: %w", path, err)
	}
	return f.Close()
}

// policiesKey holds the app's registry in its Metadata.
const policiesKey = "policies"

// appPolicies is the registry the app was built with (newApp); an app
// built otherwise (a test's) runs with policies.Default.
func appPolicies(c *cli.Context) *registry.Registry {
	if reg, ok := c.App.Metadata[policiesKey].(*registry.Registry); ok {
		return reg
	}
	return policies.Default
}

// configReader reads configs and scenario files with the app's policies.
func configReader(c *cli.Context) configs.Reader { return configs.Reader{Policies: appPolicies(c)} }
