package slurmtoken

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// CheckUsage is the check's argument list (cmd/bursar-slurm-check and
// `bursar slurm check` read the same).
const CheckUsage = "[slurm check] --key-file KEY [--once-dir DIR [--verify]] [--cpus N] [--account A] [--user U] [--unit cpu|gpu] " +
	"[--tres-per-job S] [--tres-per-node S] [--tres-per-task S] [--tres-per-socket S] [--cpus-per-tres S] [--array S] [--min-nodes N] [--max-nodes N] [--tasks N] TOKEN"

// RunCheck reads the check's arguments (CheckUsage; each flag also as
// --flag=value) and answers Check's line. The job's flags are what the
// plugin read from the job description; given any of them, the job must
// fit the lease (Job.Fits) before its token is spent.
func RunCheck(args []string, now time.Time) (string, bool) {
	if len(args) >= 2 && args[0] == "slurm" && args[1] == "check" {
		args = args[2:]
	}
	if len(args) > 0 && args[0] == verifyArg {
		// A claim's verifier (verify.go), started by a check: it prints
		// nowhere (its streams are closed), and its status is for tests.
		if err := runVerify(args[1:]); err != nil && !errors.Is(err, ErrClaimKept) {
			return "verify: " + err.Error(), false
		}
		return "verify: done", true
	}
	verify := false
	var keyFile, onceDir, tok string
	var job Job
	hasJob := false
	strs := map[string]*string{"--key-file": &keyFile, "--once-dir": &onceDir, "--account": &job.Account, "--user": &job.User, "--unit": &job.Unit,
		"--tres-per-job": &job.TRESPerJob, "--tres-per-node": &job.TRESPerNode, "--tres-per-task": &job.TRESPerTask,
		"--tres-per-socket": &job.TRESPerSocket, "--cpus-per-tres": &job.CPUsPerTRES, "--array": &job.Array}
	ints := map[string]*int{"--cpus": &job.CPUs, "--min-nodes": &job.MinNodes, "--max-nodes": &job.MaxNodes, "--tasks": &job.Tasks}
	usage := func(why string) (string, bool) {
		return fmt.Sprintf("refuse: %s (usage: bursar-slurm-check %s)", why, CheckUsage), false
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--verify" {
			verify = true
			continue
		}
		if !strings.HasPrefix(a, "-") {
			if tok != "" {
				return usage(fmt.Sprintf("unexpected argument %q", a))
			}
			tok = a
			continue
		}
		name, val, inline := strings.Cut(a, "=")
		sp, isStr := strs[name]
		ip, isInt := ints[name]
		if !isStr && !isInt {
			return usage(fmt.Sprintf("unexpected argument %q", a))
		}
		if !inline {
			if i+1 >= len(args) {
				return usage(name + " needs a value")
			}
			i++
			val = args[i]
		}
		if name != "--key-file" && name != "--once-dir" {
			hasJob = true
		}
		if isStr {
			*sp = val
			continue
		}
		n, err := strconv.Atoi(val)
		if err != nil || n < 0 {
			return usage(fmt.Sprintf("%s wants a whole number ≥ 0, got %q", name, val))
		}
		*ip = n
	}
	if keyFile == "" || tok == "" {
		return usage("give --key-file and a token")
	}
	if job.Unit != "" && job.Unit != UnitCPU && job.Unit != UnitGPU {
		return usage(fmt.Sprintf("--unit is cpu or gpu, not %q", job.Unit))
	}
	var v func(dir, tok, nonce string) error
	if verify {
		v = startVerifier
	}
	if !hasJob {
		return check(keyFile, tok, onceDir, nil, now, v)
	}
	return check(keyFile, tok, onceDir, &job, now, v)
}
