package slurmtoken

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A claim no job carries the token of is removed, and the token admits a
// job again; a claim a job carries (at either look), a released lease's
// record, another claim's record and a Slurm that cannot be asked all
// keep it (issue 35: a token spent on a job slurmctld refused lost its
// lease).
func TestVerifyClaim(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	keyFile := filepath.Join(t.TempDir(), "key")
	require.NoError(t, os.WriteFile(keyFile, key, 0o600))
	now := time.Unix(1000, 0)
	l := Lease{Lease: 2, Campaign: "sci", GPUs: 1, Expires: 1600, User: "u"}
	tok := Sign(key, l)
	job := &Job{CPUs: 1, User: "u"}
	noSleep := func(time.Duration) {}
	jobsOf := func(lists ...[]string) Jobs {
		i := 0
		return func(context.Context) ([]string, error) {
			i++
			return lists[min(i, len(lists))-1], nil
		}
	}

	for _, c := range []struct {
		name  string
		jobs  Jobs
		freed bool
	}{
		{"no job carries the token: unspent", jobsOf([]string{"", "other", ""}), true},
		{"a job carries it at the first look", jobsOf([]string{tok + " "}), false},
		{"a job carries it at the second look", jobsOf([]string{""}, []string{"x", tok}), false},
		{"squeue failed", func(context.Context) ([]string, error) { return nil, errors.New("down") }, false},
	} {
		dir := t.TempDir()
		var nonce string
		line, ok := check(keyFile, tok, dir, job, now, func(_, _, n string) error { nonce = n; return nil })
		require.True(t, ok, line)
		require.NotEmpty(t, nonce)
		err := VerifyClaim(dir, tok, nonce, c.jobs, noSleep, time.Second, 3*time.Second)
		line, ok = check(keyFile, tok, dir, job, now, nil)
		assert.Equal(t, c.freed, ok, "%s: %v, then %s", c.name, err, line)
		if !c.freed {
			assert.Contains(t, line, "admitted a job already", c.name)
		}
	}

	// Only the verifier's own claim goes: not a released lease's record
	// written since, nor a claim with another nonce.
	dir := t.TempDir()
	var nonce string
	_, ok := check(keyFile, tok, dir, job, now, func(_, _, n string) error { nonce = n; return nil })
	require.True(t, ok)
	require.NoError(t, MarkReleased(dir, l))
	assert.ErrorIs(t, VerifyClaim(dir, tok, nonce, jobsOf([]string{""}), noSleep, time.Second), ErrClaimKept)
	line, _ := check(keyFile, tok, dir, job, now, nil)
	assert.Contains(t, line, "was released")
	dir = t.TempDir()
	_, ok = check(keyFile, tok, dir, job, now, nil)
	require.True(t, ok)
	assert.ErrorIs(t, VerifyClaim(dir, tok, "another", jobsOf([]string{""}), noSleep, time.Second), ErrClaimKept)
	line, _ = check(keyFile, tok, dir, job, now, nil)
	assert.Contains(t, line, "admitted a job already")
}
