package slurmgate

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
)

// The pool from Slurm (issue 23 §4): `serve --pool-from-slurm PARTITION`
// reads the gated partition's nodes with sinfo and makes the pool their
// GPUs, counted from the nodes' GRES (gpu:N, gpu:TYPE:N), or their CPUs
// when no node of the partition has a GPU (the one-node cluster of CI,
// where CPUs stand in for GPUs).

// Pool asks sinfo for the partition's nodes and counts the pool: n GPUs,
// or CPUs when no node has one (unit says which).
func Pool(partition string) (n int, unit string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), CmdTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, "sinfo", "-h", "-N", "-p", partition, "-o", "%N|%c|%G").Output()
	if err != nil {
		return 0, "", fmt.Errorf("sinfo: %w", err)
	}
	return ParseSinfoPool(string(out))
}

// ParseSinfoPool counts the pool in sinfo's node lines (NODE|CPUS|GRES),
// each node once: the GPUs of its GRES when any node has some, else the
// CPUs.
func ParseSinfoPool(out string) (n int, unit string, err error) {
	seen := map[string]bool{}
	cpus, gpus := 0, 0
	for i, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		f := strings.Split(strings.TrimSpace(line), "|")
		if len(f) != 3 {
			return 0, "", fmt.Errorf("sinfo line %d: want NODE|CPUS|GRES, got %q", i+1, line)
		}
		if seen[f[0]] {
			continue
		}
		seen[f[0]] = true
		c, err := strconv.Atoi(f[1])
		if err != nil || c < 0 {
			return 0, "", fmt.Errorf("sinfo line %d: node %s: CPUs %q is not a count", i+1, f[0], f[1])
		}
		g, err := gresGPUs(f[2])
		if err != nil {
			return 0, "", fmt.Errorf("sinfo line %d: node %s: %w", i+1, f[0], err)
		}
		cpus += c
		gpus += g
	}
	switch {
	case len(seen) == 0:
		return 0, "", fmt.Errorf("sinfo lists no node in the partition")
	case gpus > 0:
		return gpus, "GPUs", nil
	}
	return cpus, "CPUs", nil
}

// gresGPUs counts the GPUs in a node's GRES as sinfo prints it: items
// separated by commas, each name[:type]:count with an optional socket
// list in parentheses ("gpu:a100:4(S:0-1)"); "(null)" is none.
func gresGPUs(gres string) (int, error) {
	if gres == "(null)" || gres == "" {
		return 0, nil
	}
	total := 0
	for _, item := range strings.Split(gres, ",") {
		item, _, _ = strings.Cut(item, "(")
		f := strings.Split(item, ":")
		if f[0] != "gpu" {
			continue
		}
		if len(f) < 2 {
			total++ // "gpu" alone: one
			continue
		}
		c, err := strconv.Atoi(f[len(f)-1])
		if err != nil || c < 0 {
			return 0, fmt.Errorf("GRES %q: cannot read the GPU count", gres)
		}
		total += c
	}
	return total, nil
}
