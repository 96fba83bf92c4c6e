package slurmtoken

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Job is what a submission asks for, as the gate's plugin reads it from
// slurmctld's job description (scripts/slurm/job_submit.lua) and hands it
// to the check: the check decides whether the job fits its lease before
// it spends the token (Claim), so that a job refused for its size or its
// account leaves the token usable for a corrected one. Zero fields were
// not given.
type Job struct {
	// CPUs is the job's size in CPUs as the plugin counts it: the
	// largest of min_cpus and tasks × CPUs per task.
	CPUs int
	// Account is the job's --account ("" none).
	Account string
	// User is the Unix user whose job it is (job_submit/lua's
	// job_desc.user_name, which slurmctld derives from the submission's
	// authenticated uid): it must be the user the token names.
	User string
	// The GPU requests as job_submit/lua sees them on Slurm 22.05: the
	// tres_per_job, tres_per_node, tres_per_task and tres_per_socket
	// strings ("gres:gpu:2", "gres:gpu:a100:2", several comma-separated;
	// --gpus, --gres=gpu:N and --gpus-per-node, --gpus-per-task,
	// --gpus-per-socket).
	TRESPerJob, TRESPerNode, TRESPerTask, TRESPerSocket string
	// CPUsPerTRES is --cpus-per-gpu as Slurm 22.05 writes it
	// ("gres:gpu:4"): counting CPUs, the job's GPUs times it count too.
	CPUsPerTRES string
	// Array is --array as the plugin reads it (array_inx: "0-7",
	// "1,3,8-10", "0-15:4", each optionally "%N", at most N at once; ""
	// not an array). Every task is the job's size, and the lease must
	// cover all the tasks that may run at once.
	Array string
	// MinNodes, MaxNodes and Tasks are -N MIN[-MAX] and -n.
	MinNodes, MaxNodes, Tasks int
	// Unit is what a lease's size counts: UnitCPU (the one-node pilot,
	// where CPUs stand in for GPUs) or UnitGPU.
	Unit string
}

// The units a lease's size may count.
const (
	UnitCPU = "cpu"
	UnitGPU = "gpu"
)

// GPUs is the most GPUs the job can get: the largest of what it asks per
// job, per node times its nodes, and per task times its tasks. Its nodes
// are -N's maximum when given, else the larger of -N's minimum and its
// tasks (Slurm may put each task on a node of its own); its tasks are -n,
// or one per node. GPUs per socket are refused: the job description does
// not say how many sockets the job gets.
func (j Job) GPUs() (int, error) {
	perJob, err := gpusIn(j.TRESPerJob)
	if err != nil {
		return 0, err
	}
	perNode, err := gpusIn(j.TRESPerNode)
	if err != nil {
		return 0, err
	}
	perTask, err := gpusIn(j.TRESPerTask)
	if err != nil {
		return 0, err
	}
	perSocket, err := gpusIn(j.TRESPerSocket)
	if err != nil {
		return 0, err
	}
	if perSocket > 0 {
		return 0, errors.New("GPUs per socket (--gpus-per-socket) cannot be checked against a lease: ask for GPUs per job, node or task")
	}
	nodes := max(j.MinNodes, 1)
	switch {
	case j.MaxNodes > nodes:
		nodes = j.MaxNodes
	case j.MaxNodes == 0:
		nodes = max(nodes, j.Tasks)
	}
	tasks := max(j.Tasks, j.MinNodes, 1)
	return max(perJob, perNode*nodes, perTask*tasks), nil
}

// gpusIn is the GPU count in a TRES string: each comma-separated item is
// [gres: or gres/]NAME[:TYPE][:COUNT][(…)], and only NAME gpu counts; a
// GPU item without a count asks for one.
func gpusIn(spec string) (int, error) {
	n := 0
	for _, item := range strings.Split(spec, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		if i := strings.IndexByte(item, '('); i >= 0 {
			item = item[:i] // gpu:a100:4(S:0-1): the sockets, not a count
		}
		item = strings.TrimPrefix(strings.TrimPrefix(item, "gres:"), "gres/")
		f := strings.Split(item, ":")
		if f[0] != "gpu" {
			continue
		}
		c, last := 1, f[len(f)-1]
		switch {
		case len(f) == 1:
		case last != "" && last[0] >= '0' && last[0] <= '9':
			// A count (a type name starts with a letter): one that does
			// not read as a modest whole number is refused, not taken for
			// a type and counted as one GPU.
			v, err := strconv.Atoi(last)
			if err != nil || v > 1<<20 {
				return 0, fmt.Errorf("cannot read the GPU count in %q", spec)
			}
			c = v
		case len(f) > 3 || last == "":
			return 0, fmt.Errorf("cannot read the GPU count in %q", spec)
		} // else gpu:a100: a type, one GPU
		n += c
	}
	return n, nil
}

// Fits says why job j does not fit lease l (nil when it does): larger
// than the lease in the lease's unit (and, counting CPUs, in GPUs too,
// where the cluster has them), under another account than the token's,
// or another user's than the one the token was issued for.
func (j Job) Fits(l Lease) error {
	gpus, err := j.GPUs()
	if err != nil {
		return err
	}
	perGPU, err := gpusIn(j.CPUsPerTRES)
	if err != nil {
		return err
	}
	tasks, err := ArrayAtOnce(j.Array)
	if err != nil {
		return err
	}
	cpus := max(j.CPUs, perGPU*gpus)
	// An array's tasks are jobs of the job's size each.
	what := "the job asks for"
	if tasks > 1 {
		what = fmt.Sprintf("the array's %d tasks at once (limit them with --array=…%%N) ask for", tasks)
	}
	if j.Unit != UnitGPU && cpus*tasks > l.GPUs {
		return fmt.Errorf("%s %d CPUs but lease %d is for %d", what, cpus*tasks, l.Lease, l.GPUs)
	}
	if gpus*tasks > l.GPUs {
		return fmt.Errorf("%s %d GPUs but lease %d is for %d", what, gpus*tasks, l.Lease, l.GPUs)
	}
	if j.Account != "" && strings.ToLower(j.Account) != l.SlurmAccount() {
		return fmt.Errorf("lease %d is campaign %s's: the job must run under account %s, not %s", l.Lease, l.Campaign, l.SlurmAccount(), j.Account)
	}
	switch {
	case l.User == "":
		return fmt.Errorf("lease %d's token names no user: ask the service for a new token", l.Lease)
	case j.User == "":
		return errors.New("the gate did not say whose job it is (a job_submit.lua older than its check): refused")
	case j.User != l.User:
		return fmt.Errorf("lease %d's token was issued to user %s: user %s's job cannot run on it (each user asks for a token of their own)", l.Lease, l.User, j.User)
	}
	return nil
}

// maxArrayTasks bounds an array's task count as read (Slurm's own
// MaxArraySize is 1001 by default).
const maxArrayTasks = 1 << 20

// ArrayAtOnce is how many tasks of an array (--array, as job_submit/lua
// reads it: "0-7", "1,3,8-10", "0-15:4", "0-7%2") may run at once: all of
// them, or the %N throttle when smaller; 1 for "" (no array).
func ArrayAtOnce(spec string) (int, error) {
	if spec == "" {
		return 1, nil
	}
	list, limit, throttled := strings.Cut(spec, "%")
	bad := fmt.Errorf("cannot read the job array %q", spec)
	n := 0
	for _, item := range strings.Split(list, ",") {
		rng, step, stepped := strings.Cut(item, ":")
		lo, hi, isRange := strings.Cut(rng, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return 0, bad
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return 0, bad
			}
		}
		by := 1
		if stepped {
			if by, err = strconv.Atoi(step); err != nil || by < 1 {
				return 0, bad
			}
		}
		if b-a > maxArrayTasks {
			return 0, bad
		}
		n += (b-a)/by + 1
		if n > maxArrayTasks {
			return 0, bad
		}
	}
	if throttled {
		m, err := strconv.Atoi(limit)
		if err != nil || m < 0 {
			return 0, bad
		}
		if m > 0 && m < n {
			n = m
		}
	}
	return n, nil
}
