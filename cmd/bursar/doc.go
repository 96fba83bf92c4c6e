// Command bursar runs the Bursar broker as a live service and talks to it.
//
//	bursar serve            serve the broker over HTTP in real time
//	bursar demo             an agent that negotiates the full loop with a server
//	bursar demo --selftest  the same against an in-process server, checked
//	bursar lease -- CMD     run a command on a lease (grant, notice, deadline, release)
//	bursar lease-watchdog   (hidden) cleans up after a killed `bursar lease`
//	bursar journal repair   cut a damaged journal knowingly, as serve asks
//
// The broker itself is package policy; the HTTP service is package service,
// its wire contract package api and its typed client package client; the
// lease wrapper and its watchdog are package lease, the Slurm enforcer,
// the job helpers and reconciliation package slurmgate. This package only
// reads flags and calls them.
// `bursar --help` and `bursar <command> --help` explain every flag;
// docs/service.md explains the API, the security model and the durability
// guarantee, docs/workflows.md how Parsl, Snakemake and Slurm use `bursar
// lease`. The issue these commands answer is issue 13 (hardening for a
// shared login node, and the lease wrapper).
package main
