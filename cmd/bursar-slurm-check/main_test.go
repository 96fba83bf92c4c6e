package main

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/bursar-hpc/bursar/internal/slurmtoken"
)

// The arguments of `bursar slurm check`, with or without the subcommand
// words, give the line of slurmtoken.Check; anything else is refused with
// the usage.
func TestRun(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	keyFile := filepath.Join(t.TempDir(), "key")
	assert.NoError(t, os.WriteFile(keyFile, append(key, '\n'), 0o600))
	exp := time.Now().Unix() + 100
	tok := slurmtoken.Sign(key, slurmtoken.Lease{Lease: 3, Campaign: "Sci", GPUs: 2, Expires: exp, User: "alice"})
	for _, args := range [][]string{
		{"slurm", "check", "--key-file", keyFile, tok},
		{"--key-file", keyFile, tok},
		{"--key-file=" + keyFile, tok},
	} {
		line, ok := run(args)
		assert.True(t, ok, "%v: %s", args, line)
		assert.Regexp(t, `^ok 3 Sci 2 (99|100) sci `+strconv.FormatInt(exp, 10)+` 1$`, line)
	}
	for _, args := range [][]string{
		{"slurm", "check", tok},
		{"--key-file", keyFile},
		{"--key-file", keyFile, tok, "extra"},
		{"--key-file", keyFile, "-x"},
	} {
		line, ok := run(args)
		assert.False(t, ok, "%v", args)
		assert.Contains(t, line, "refuse: ")
	}
	// The job as the plugin describes it: GPUs (as Slurm writes them),
	// CPUs, nodes, tasks, account; a refusal leaves the token unspent.
	once := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--tres-per-node", "gres:gpu:2", "--min-nodes", "2", "--max-nodes=2"}, "refuse: the job asks for 4 GPUs but lease 3 is for 2"},
		{[]string{"--unit", "gpu", "--cpus", "64", "--tres-per-task=gres:gpu:1", "--tasks", "3"}, "refuse: the job asks for 3 GPUs but lease 3 is for 2"},
		{[]string{"--cpus", "3"}, "refuse: the job asks for 3 CPUs but lease 3 is for 2"},
		{[]string{"--account", "storm"}, "refuse: lease 3 is campaign Sci's: the job must run under account sci, not storm"},
		{[]string{"--tres-per-socket", "gres:gpu:1"}, "refuse: GPUs per socket"},
		{[]string{"--unit", "tpu"}, "refuse: --unit is cpu or gpu"},
		{[]string{"--cpus", "-1"}, "refuse: --cpus wants a whole number"},
		{[]string{"--unit", "gpu", "--cpus", "64", "--tres-per-job", "gres:gpu:a100:2", "--account", "SCI", "--user", "bob"},
			"refuse: lease 3's token was issued to user alice: user bob's job cannot run on it"},
		{[]string{"--unit", "gpu", "--cpus", "64", "--tres-per-job", "gres:gpu:a100:2", "--account", "SCI", "--user=alice"}, "ok 3 Sci 2 "},
		{[]string{"--cpus", "1", "--user", "alice"}, "refuse: lease 3 of campaign Sci admitted a job already"},
	} {
		line, ok := run(append(append([]string{"slurm", "check", "--key-file", keyFile, "--once-dir", once}, c.args...), tok))
		assert.Equal(t, c.want[:2] == "ok", ok, "%v: %s", c.args, line)
		assert.Contains(t, line, c.want, "%v", c.args)
	}

	// One hex digit of the MAC changed (to another digit, whatever it
	// was: replacing it with a fixed "0" left the token intact one time
	// in sixteen).
	altered := tok[:len(tok)-1] + "0"
	if tok[len(tok)-1] == '0' {
		altered = tok[:len(tok)-1] + "1"
	}
	line, ok := run([]string{"--key-file", keyFile, altered})
	assert.False(t, ok)
	assert.Contains(t, line, "signature does not match")
}
