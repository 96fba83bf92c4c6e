// Command bursar-slurm-check is `bursar slurm check` alone, for the
// job_submit plugin (scripts/slurm/job_submit.lua, docs/slurm.md): the
// plugin runs it once per submission inside slurmctld, with slurmctld's
// job lock held, so it should start fast, and this binary is a small
// fraction of bursar's size and start-up. It takes the same arguments
// (`bursar-slurm-check slurm check --key-file KEY [--once-dir DIR] TOKEN`,
// the first two optional), so the plugin's BURSAR may name either, and
// prints the same
// line: `ok LEASE CAMPAIGN GPUS SECONDS_LEFT ACCOUNT EXPIRES`, or
// `refuse: REASON` with exit status 1.
package main

import (
	"fmt"
	"os"
	"strings"
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

// run reads [slurm check] --key-file KEY [--once-dir DIR] TOKEN (or
// --key-file=KEY, --once-dir=DIR).
func run(args []string) (string, bool) {
	if len(args) >= 2 && args[0] == "slurm" && args[1] == "check" {
		args = args[2:]
	}
	var keyFile, onceDir, tok string
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--key-file" && i+1 < len(args):
			keyFile = args[i+1]
			i++
		case strings.HasPrefix(a, "--key-file="):
			keyFile = strings.TrimPrefix(a, "--key-file=")
		case a == "--once-dir" && i+1 < len(args):
			onceDir = args[i+1]
			i++
		case strings.HasPrefix(a, "--once-dir="):
			onceDir = strings.TrimPrefix(a, "--once-dir=")
		case tok == "" && !strings.HasPrefix(a, "-"):
			tok = a
		default:
			return fmt.Sprintf("refuse: unexpected argument %q (usage: bursar-slurm-check [slurm check] --key-file KEY [--once-dir DIR] TOKEN)", a), false
		}
	}
	if keyFile == "" || tok == "" {
		return "refuse: usage: bursar-slurm-check [slurm check] --key-file KEY [--once-dir DIR] TOKEN", false
	}
	return slurmtoken.Check(keyFile, tok, onceDir, time.Now())
}
