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
	tok := slurmtoken.Sign(key, slurmtoken.Lease{Lease: 3, Campaign: "Sci", GPUs: 2, Expires: exp})
	for _, args := range [][]string{
		{"slurm", "check", "--key-file", keyFile, tok},
		{"--key-file", keyFile, tok},
		{"--key-file=" + keyFile, tok},
	} {
		line, ok := run(args)
		assert.True(t, ok, "%v: %s", args, line)
		assert.Regexp(t, `^ok 3 Sci 2 (99|100) sci `+strconv.FormatInt(exp, 10)+`$`, line)
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
	line, ok := run([]string{"--key-file", keyFile, tok[:len(tok)-1] + "0"})
	assert.False(t, ok)
	if tok[len(tok)-1] != '0' {
		assert.Contains(t, line, "signature does not match")
	}
}
