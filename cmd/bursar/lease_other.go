//go:build !unix

package main

import (
	"context"
	"errors"
	"log/slog"

	"github.com/urfave/cli/v2"

	"github.com/bursar-hpc/bursar/service"
)

// leaseCommand needs process groups and POSIX signals.
func leaseCommand() *cli.Command {
	return &cli.Command{Name: "lease", Usage: "run a command on a lease (unix only)",
		Action: func(*cli.Context) error { return errors.New("bursar lease needs a unix system") }}
}

func leaseWatchdogCommand() *cli.Command {
	return &cli.Command{Name: "lease-watchdog", Hidden: true,
		Action: func(*cli.Context) error { return errors.New("bursar lease needs a unix system") }}
}

func startSlurmEnforcer(_ context.Context, c slurmEnforceFlags, _ *service.Service, _ []byte, _ *slog.Logger) error {
	if c.enforce {
		return errors.New("--slurm-enforce needs a unix system")
	}
	return nil
}
