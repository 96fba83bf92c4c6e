package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bursar-hpc/bursar/internal/slurmtoken"
)

// The check's --verify leaves a verifier that unspends a token no job
// carries, whichever checker the plugin's BURSAR names: bursar-slurm-check
// or bursar (which routes `slurm check verify-claim` to it). Here squeue
// is a stand-in that lists no job. Before the verifier was started as
// `BIN slurm check verify-claim`, bursar's refused the command and the
// token stayed spent.
func TestSlurmCheckVerifyUnspends(t *testing.T) {
	check := filepath.Join(t.TempDir(), "bursar-slurm-check")
	if out, err := exec.Command(goTool(), "build", "-o", check, "../bursar-slurm-check").CombinedOutput(); err != nil {
		t.Fatalf("building bursar-slurm-check: %v\n%s", err, out)
	}
	fake := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(fake, "squeue"), []byte("#!/bin/sh\nexit 0\n"), 0o755))
	keyFile := filepath.Join(t.TempDir(), "key")
	key := []byte("0123456789abcdef0123456789abcdef")
	require.NoError(t, os.WriteFile(keyFile, key, 0o600))
	checkers := []string{check, bin}
	onces := []string{t.TempDir(), t.TempDir()}
	for i, checker := range checkers {
		once := onces[i]
		tok := slurmtoken.Sign(key, slurmtoken.Lease{Lease: i + 1, Campaign: "sci", GPUs: 1, Expires: time.Now().Unix() + 600, User: "u"})
		cmd := exec.Command(checker, "slurm", "check", "--key-file", keyFile, "--once-dir", once, "--verify", "--cpus", "1", "--user", "u", tok)
		cmd.Env = append(cleanEnv(), "PATH="+fake+":/usr/bin:/bin")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		assert.Regexp(t, `^ok `, string(out))
		ents, _ := os.ReadDir(once)
		require.Len(t, ents, 1, "%s: the token is spent", checker)
	}
	// Both verifiers at work at once: each looks 1 s and 4 s in.
	end := time.Now().Add(15 * time.Second)
	for i, checker := range checkers {
		once := onces[i]
		var ents []os.DirEntry
		for ents, _ = os.ReadDir(once); len(ents) > 0 && time.Now().Before(end); ents, _ = os.ReadDir(once) {
			time.Sleep(100 * time.Millisecond)
		}
		assert.Empty(t, ents, "%s: the verifier unspent the token no job carries", filepath.Base(checker))
	}
}
