//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// The gate tests run only what is under test (issue 35 item 6): the
// bursar binary TestMain built, the checker startSlurmGate built, the
// cluster scripts/slurm-local.sh starts in the test's own folder, and the
// Slurm commands of the system's own folders. A machine where a pilot ran
// keeps a stale bursar and bursar-slurm-check in /usr/local/bin (first on
// the usual PATH), a shell's SLURM_CONF, SBATCH_* and SLURM_* input
// variables (which srun and sbatch take as options: SBATCH_TIMELIMIT,
// SBATCH_SIGNAL, SLURM_NTASKS, …) and slurm-local.sh's own settings
// (BURSAR_SLURM_EXTRA_CONF, BURSAR_SLURM_NODES, SLURM_NICE): none of it
// reaches a gate test's commands, its cluster or the jobs (sbatch exports
// its caller's environment into the job).

// slurmTestPath is the PATH of every command a gate test runs: the
// system's folders, where the Slurm packages install; never
// /usr/local/bin, never the caller's PATH.
const slurmTestPath = "/usr/bin:/bin:/usr/sbin:/sbin"

// slurmInputVar says whether an environment variable is one that a
// Slurm command, slurm-local.sh or a Bursar command reads as a setting.
func slurmInputVar(kv string) bool {
	name, _, _ := strings.Cut(kv, "=")
	for _, p := range []string{"BURSAR_", "SLURM_", "SBATCH_", "SRUN_", "SALLOC_", "SQUEUE_", "SCANCEL_", "SINFO_", "SCONTROL_", "SACCT_"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return name == "PATH"
}

// slurmEnv is the environment of a gate test's commands: the caller's
// without any Slurm or Bursar setting, PATH slurmTestPath, then extra.
func slurmEnv(extra ...string) []string {
	env := []string{"PATH=" + slurmTestPath}
	for _, kv := range os.Environ() {
		if !slurmInputVar(kv) {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

// sysBin is the system's own program name (in slurmTestPath), so that a
// command the test starts directly is not found on the caller's PATH.
func sysBin(name string) string {
	for _, d := range filepath.SplitList(slurmTestPath) {
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p
		}
	}
	return name
}

func TestSlurmEnvDropsCallerSettings(t *testing.T) {
	t.Setenv("SBATCH_TIMELIMIT", "1")
	t.Setenv("SLURM_CONF", "/tmp/bursar-slurm/slurm.conf")
	t.Setenv("BURSAR_SLURM_EXTRA_CONF", "/tmp/extra.conf")
	t.Setenv("PATH", "/usr/local/bin:"+os.Getenv("PATH"))
	t.Setenv("HOME", "/root")
	env := slurmEnv("SLURM_CONF=/own/slurm.conf")
	joined := "\n" + strings.Join(env, "\n") + "\n"
	assert.NotContains(t, joined, "SBATCH_TIMELIMIT")
	assert.NotContains(t, joined, "/tmp/bursar-slurm")
	assert.NotContains(t, joined, "BURSAR_SLURM_EXTRA_CONF")
	assert.NotContains(t, joined, "/usr/local/bin")
	assert.Contains(t, joined, "\nPATH="+slurmTestPath+"\n")
	assert.Contains(t, joined, "\nSLURM_CONF=/own/slurm.conf\n")
	assert.Contains(t, joined, "\nHOME=/root\n", "other variables are kept")
}

// TestSlurmGateOwnState starts the gate's cluster from a caller whose
// environment a pilot left behind: a PATH whose first folder holds a
// bursar, a bursar-slurm-check and Slurm commands that are not the ones
// under test, Slurm input variables, another cluster's SLURM_CONF and
// slurm-local.sh settings. None of it may be used: the wrapper, its job,
// the gate and the cluster run on the test's own binaries and state. At
// the parent the stale srun and sbatch ran and the cluster took the stale
// extra configuration (KillWait=1).
func TestSlurmGateOwnState(t *testing.T) {
	if os.Getenv("BURSAR_SLURM") != "1" {
		t.Skip("set BURSAR_SLURM=1 to gate a one-node Slurm cluster")
	}
	stale := t.TempDir()
	used := filepath.Join(stale, "used")
	for _, name := range []string{"bursar", "bursar-slurm-check", "srun", "sbatch", "squeue", "scancel", "sinfo", "scontrol"} {
		real := sysBin(name)
		body := "#!/bin/sh\necho " + name + " >> " + used + "\n"
		if real != name {
			body += "exec " + real + " \"$@\"\n"
		}
		assert.NoError(t, os.WriteFile(filepath.Join(stale, name), []byte(body), 0o755))
	}
	extra := filepath.Join(stale, "extra.conf")
	assert.NoError(t, os.WriteFile(extra, []byte("KillWait=1\n"), 0o644))
	t.Setenv("PATH", stale+":"+os.Getenv("PATH"))
	t.Setenv("SLURM_CONF", filepath.Join(stale, "slurm.conf"))
	t.Setenv("BURSAR_SLURM_EXTRA_CONF", extra)
	t.Setenv("SBATCH_TIMELIMIT", "30")
	t.Setenv("SLURM_NTASKS", "3")

	g := startSlurmGate(t)
	job := filepath.Join(g.dir, "own.sh")
	assert.NoError(t, os.WriteFile(job, []byte("#!/bin/bash\necho \"$PATH\" > "+g.dir+"/own.path\n"), 0o755))
	lp := g.lease(t, g.srv, "--gpus", "2", "--duration", "60", "--", "sbatch", "-n", "1", "-o", "/dev/null", job)
	assert.Equal(t, 0, lp.wait(t, time.Minute), lp.stderr.String())
	lp = g.lease(t, g.srv, "--gpus", "2", "--duration", "60", "--", "srun", "-n", "1", "true")
	assert.Equal(t, 0, lp.wait(t, time.Minute), "SLURM_NTASKS=3 would ask for 3 CPUs on a 2-GPU lease\n%s", lp.stderr.String())
	out, _ := g.sh(t, "scontrol show config | grep -i '^KillWait'")
	assert.Contains(t, out, "30 sec", "the cluster's own configuration, not BURSAR_SLURM_EXTRA_CONF's")
	b, err := os.ReadFile(filepath.Join(g.dir, "own.path"))
	if assert.NoError(t, err, "the batch job ran") {
		assert.NotContains(t, string(b), stale, "the job runs with the test's PATH")
	}
	b, _ = os.ReadFile(used)
	assert.Empty(t, string(b), "programs from the caller's PATH ran")
}
