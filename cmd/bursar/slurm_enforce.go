//go:build unix

package main

import (
	"context"
	"log/slog"

	"github.com/bursar-hpc/bursar/service"
	"github.com/bursar-hpc/bursar/slurmgate"
)

// startSlurmEnforcer starts the enforcer (slurmgate.Enforcer) when serve
// --slurm-enforce asks for it; it stops with ctx.
func startSlurmEnforcer(ctx context.Context, c slurmEnforceFlags, svc *service.Service, key []byte, log *slog.Logger) error {
	if !c.enforce {
		return nil
	}
	if len(key) == 0 {
		return errSlurmEnforceNoKey
	}
	rule, err := slurmgate.ParseUnleased(c.unleased)
	if err != nil {
		return err
	}
	ungated := map[string]bool{}
	for _, p := range c.ungated {
		ungated[p] = true
	}
	e := &slurmgate.Enforcer{Key: key, Leases: svc, Cluster: slurmgate.Exec{}, Grace: c.grace, Ledger: c.ledger, Unit: c.unit,
		Unleased: rule, Ungated: ungated, Log: log}
	// A release of a lease whose job runs holds the lease until nothing
	// of it runs (docs/slurm.md, "A lease ends when nothing of it runs").
	svc.SetSlurmRunning(e.Running)
	go e.Run(ctx)
	log.Info("slurm enforcer started", "grace", c.grace, "ledger", c.ledger, "unit", e.Unit, "unleased", rule, "ungated", c.ungated)
	return nil
}
