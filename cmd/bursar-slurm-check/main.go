// Command bursar-slurm-check is `bursar slurm check` alone, for the
// job_submit plugin (scripts/slurm/job_submit.lua, docs/slurm.md): the
// plugin runs it once per submission inside slurmctld, with slurmctld's
// job lock held, so it should start fast, and this binary is a small
// fraction of bursar's size and start-up. It takes the same arguments
// (slurmtoken.CheckUsage: `bursar-slurm-check slurm check --key-file KEY
// [--once-dir DIR] [the job's size and account] TOKEN`, the first two
// words optional), so the plugin's BURSAR may name either, and prints the
// same line: `ok LEASE CAMPAIGN GPUS SECONDS_LEFT ACCOUNT EXPIRES MINUTES`, or
// `refuse: REASON` with exit status 1.
package main

import (
	"fmt"
	"os"
	"time"

	"github.com/bursar-hpc/bursar/internal/slurmtoken"
)

func main() {
	line, ok := run(os.Args[1:])
	fmt.Println(line)
	if !ok {
		os.Exit(1)
	}
}

// run reads the check's arguments (slurmtoken.CheckUsage).
func run(args []string) (string, bool) { return slurmtoken.RunCheck(args, time.Now()) }
