package slurmtoken

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// By hand, the job descriptions Slurm 22.05's job_submit/lua shows for
// each way of asking for GPUs (measured on the one-node cluster with
// GresTypes=gpu): --gres=gpu:2 → tres_per_node "gres:gpu:2"; --gpus=3 →
// tres_per_job "gres:gpu:3"; --gpus-per-node=2 -N 2 → tres_per_node
// "gres:gpu:2", min and max nodes 2; --gpus-per-task=1 -n 4 →
// tres_per_task "gres:gpu:1", 4 tasks.
func TestJobGPUsByHand(t *testing.T) {
	for _, c := range []struct {
		name string
		job  Job
		want int
	}{
		{"nothing", Job{}, 0},
		{"--gres=gpu:2", Job{TRESPerNode: "gres:gpu:2"}, 2},
		{"--gpus=3", Job{TRESPerJob: "gres:gpu:3"}, 3},
		{"--gpus-per-node=2 -N 2", Job{TRESPerNode: "gres:gpu:2", MinNodes: 2, MaxNodes: 2}, 4},
		{"--gpus-per-node=2 -N 1-3: up to 3 nodes", Job{TRESPerNode: "gres:gpu:2", MinNodes: 1, MaxNodes: 3}, 6},
		{"--gpus-per-node=1 -n 4, no -N: each task may get a node", Job{TRESPerNode: "gres:gpu:1", Tasks: 4}, 4},
		{"--gpus-per-task=1 -n 4", Job{TRESPerTask: "gres:gpu:1", Tasks: 4}, 4},
		{"--gpus-per-task=2 -N 3: a task per node", Job{TRESPerTask: "gres:gpu:2", MinNodes: 3, MaxNodes: 3}, 6},
		{"typed, with sockets", Job{TRESPerNode: "gres:gpu:a100:4(S:0-1)"}, 4},
		{"two types", Job{TRESPerNode: "gres:gpu:a100:2,gres:gpu:v100:1"}, 3},
		{"a type, no count", Job{TRESPerNode: "gres:gpu:a100"}, 1},
		{"another GRES only", Job{TRESPerNode: "gres:shard:8,gres/mps:100"}, 0},
		{"gres/ and bare", Job{TRESPerJob: "gres/gpu:2", TRESPerNode: "gpu"}, 2},
	} {
		got, err := c.job.GPUs()
		require.NoError(t, err, c.name)
		assert.Equal(t, c.want, got, c.name)
	}
	_, err := Job{TRESPerSocket: "gres:gpu:1"}.GPUs()
	assert.ErrorContains(t, err, "GPUs per socket")
	for _, bad := range []string{"gres:gpu:a100:x:y", "gres:gpu:99999999999999999999", "gres:gpu:2x", "gres:gpu:"} {
		_, err = Job{TRESPerJob: bad}.GPUs()
		assert.ErrorContains(t, err, "cannot read the GPU count", bad)
	}
}

// Fits: a lease of 2 (campaign Sci) takes a job of up to 2 CPUs and 2
// GPUs under account sci (any case) or none; counting GPUs, the CPUs do
// not count.
func TestJobFitsByHand(t *testing.T) {
	l := Lease{Lease: 5, Campaign: "Sci", GPUs: 2, Expires: 100, User: "alice"}
	assert.NoError(t, Job{CPUs: 2, TRESPerJob: "gres:gpu:2", Account: "SCI", User: "alice"}.Fits(l))
	assert.EqualError(t, Job{CPUs: 3}.Fits(l), "the job asks for 3 CPUs but lease 5 is for 2")
	assert.EqualError(t, Job{CPUs: 1, TRESPerJob: "gres:gpu:3"}.Fits(l), "the job asks for 3 GPUs but lease 5 is for 2")
	assert.NoError(t, Job{Unit: UnitGPU, CPUs: 32, TRESPerNode: "gres:gpu:2", User: "alice"}.Fits(l))
	assert.EqualError(t, Job{Unit: UnitGPU, CPUs: 1, TRESPerTask: "gres:gpu:1", Tasks: 3}.Fits(l), "the job asks for 3 GPUs but lease 5 is for 2")
	// --cpus-per-gpu: counting CPUs, 2 GPUs at 2 CPUs each are 4 CPUs.
	assert.EqualError(t, Job{CPUs: 1, TRESPerJob: "gres:gpu:2", CPUsPerTRES: "gres:gpu:2"}.Fits(l), "the job asks for 4 CPUs but lease 5 is for 2")
	assert.NoError(t, Job{CPUs: 1, TRESPerJob: "gres:gpu:1", CPUsPerTRES: "gres:gpu:2", User: "alice"}.Fits(l))
	assert.NoError(t, Job{Unit: UnitGPU, CPUs: 1, TRESPerJob: "gres:gpu:2", CPUsPerTRES: "gres:gpu:8", User: "alice"}.Fits(l))
	// An array: every task at once must fit.
	assert.EqualError(t, Job{CPUs: 1, Array: "0-7"}.Fits(l), "the array's 8 tasks at once (limit them with --array=…%N) ask for 8 CPUs but lease 5 is for 2")
	assert.NoError(t, Job{CPUs: 1, Array: "0-7%2", User: "alice"}.Fits(l))
	assert.EqualError(t, Job{Unit: UnitGPU, TRESPerJob: "gres:gpu:1", Array: "1,5"}.Fits(Lease{Lease: 5, GPUs: 1}),
		"the array's 2 tasks at once (limit them with --array=…%N) ask for 2 GPUs but lease 5 is for 1")
	assert.EqualError(t, Job{CPUs: 1, Account: "other"}.Fits(l), "lease 5 is campaign Sci's: the job must run under account sci, not other")
	// The token's user and account (issue 35: alice ran on bob's lease).
	assert.EqualError(t, Job{CPUs: 1, User: "bob"}.Fits(l),
		"lease 5's token was issued to user alice: user bob's job cannot run on it (each user asks for a token of their own)")
	assert.EqualError(t, Job{CPUs: 1}.Fits(l), "the gate did not say whose job it is (a job_submit.lua older than its check): refused")
	assert.EqualError(t, Job{CPUs: 1, User: "alice"}.Fits(Lease{Lease: 5, Campaign: "Sci", GPUs: 2}),
		"lease 5's token names no user: ask the service for a new token")
	other := Lease{Lease: 5, Campaign: "Sci", GPUs: 2, User: "alice", Account: "physics"}
	assert.NoError(t, Job{CPUs: 1, User: "alice", Account: "Physics"}.Fits(other))
	assert.EqualError(t, Job{CPUs: 1, User: "alice", Account: "sci"}.Fits(other),
		"lease 5 is campaign Sci's: the job must run under account physics, not sci")
}

// A job refused for its size or account does not spend the token: the
// corrected job is admitted, and only then is the token spent.
func TestCheckRefusedJobKeepsToken(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "key")
	require.NoError(t, os.WriteFile(keyFile, key, 0o600))
	once := filepath.Join(dir, "once")
	require.NoError(t, os.Mkdir(once, 0o700))
	now := time.Unix(1000, 0)
	tok := Sign(key, Lease{Lease: 3, Campaign: "sci", GPUs: 2, Expires: 2000, User: "u"})
	line, ok := Check(keyFile, tok, once, &Job{CPUs: 4}, now)
	assert.False(t, ok)
	assert.Equal(t, "refuse: the job asks for 4 CPUs but lease 3 is for 2", line)
	line, ok = Check(keyFile, tok, once, &Job{CPUs: 1, TRESPerJob: "gres:gpu:4"}, now)
	assert.False(t, ok)
	assert.Equal(t, "refuse: the job asks for 4 GPUs but lease 3 is for 2", line)
	line, ok = Check(keyFile, tok, once, &Job{CPUs: 1, Account: "storm"}, now)
	assert.False(t, ok, line)
	line, ok = Check(keyFile, tok, once, &Job{CPUs: 2, TRESPerJob: "gres:gpu:2", User: "v"}, now)
	assert.False(t, ok, "another user's job: %s", line)
	line, ok = Check(keyFile, tok, once, &Job{CPUs: 2, TRESPerJob: "gres:gpu:2", User: "u"}, now)
	assert.True(t, ok, line)
	assert.Equal(t, "ok 3 sci 2 1000 sci 2000 16", line)
	line, ok = Check(keyFile, tok, once, &Job{CPUs: 1, User: "u"}, now)
	assert.False(t, ok)
	assert.Contains(t, line, "admitted a job already")
}

// Over any request: asking per job, per node or per task, the count is
// at least what was asked per job, per node and per task (each a lower
// bound of what the job can get), and more nodes or tasks never lower it.
func TestJobGPUsProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		perJob := rapid.IntRange(0, 64).Draw(t, "perJob")
		perNode := rapid.IntRange(0, 8).Draw(t, "perNode")
		perTask := rapid.IntRange(0, 8).Draw(t, "perTask")
		spec := func(n int) string {
			if n == 0 {
				return ""
			}
			return "gres:gpu:" + strconv.Itoa(n)
		}
		j := Job{TRESPerJob: spec(perJob), TRESPerNode: spec(perNode), TRESPerTask: spec(perTask),
			MinNodes: rapid.IntRange(0, 16).Draw(t, "minNodes"), MaxNodes: rapid.IntRange(0, 16).Draw(t, "maxNodes"),
			Tasks: rapid.IntRange(0, 64).Draw(t, "tasks")}
		g, err := j.GPUs()
		require.NoError(t, err)
		require.GreaterOrEqual(t, g, max(perJob, perNode, perTask))
		more := j
		more.Tasks += rapid.IntRange(0, 8).Draw(t, "moreTasks")
		more.MinNodes += rapid.IntRange(0, 4).Draw(t, "moreNodes")
		if more.MaxNodes > 0 {
			more.MaxNodes = max(more.MaxNodes, more.MinNodes)
		}
		g2, err := more.GPUs()
		require.NoError(t, err)
		require.GreaterOrEqual(t, g2, g)
	})
}

// The TRES parser never panics and never answers a negative count.
func FuzzGPUsIn(f *testing.F) {
	for _, s := range []string{"gres:gpu:2", "gres:gpu:a100:4(S:0-1)", "gres/gpu:2,gres:shard:3", "gpu", "gres:gpu:", ":::", "gpu:99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := gpusIn(s)
		if err == nil && n < 0 {
			t.Fatalf("gpusIn(%q) = %d", s, n)
		}
	})
}

func TestArrayAtOnceByHand(t *testing.T) {
	for spec, want := range map[string]int{"": 1, "0": 1, "0-7": 8, "1,3,8-10": 5, "0-15:4": 4, "0-7%2": 2, "0-1%4": 2, "0-7%0": 8} {
		got, err := ArrayAtOnce(spec)
		require.NoError(t, err, spec)
		assert.Equal(t, want, got, spec)
	}
	for _, bad := range []string{"x", "3-1", "0-7:0", "0-7%x", "-1", "0-99999999999", "1,,2"} {
		_, err := ArrayAtOnce(bad)
		assert.ErrorContains(t, err, "cannot read the job array", bad)
	}
}

// FuzzArrayAtOnce: whatever the plugin hands over, the count is read or
// refused, never a panic, and a count read is at least 1.
func FuzzArrayAtOnce(f *testing.F) {
	for _, s := range []string{"0-7", "1,3,8-10", "0-15:4%2", "", "%", "-", "0-7:"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		n, err := ArrayAtOnce(spec)
		if err == nil && (n < 1 || n > maxArrayTasks) {
			t.Fatalf("ArrayAtOnce(%q) = %d", spec, n)
		}
	})
}
