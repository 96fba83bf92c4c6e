//go:build !unix

package main

import (
	"errors"

	"github.com/urfave/cli/v2"
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
