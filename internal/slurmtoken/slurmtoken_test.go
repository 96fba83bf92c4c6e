package slurmtoken

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// Parse reads back what Sign wrote, whatever the key; Verify does only
// under the signing key; WCKey is the gate's string in lower case.
func TestParseRoundTripProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		l := Lease{
			Lease:    rapid.IntRange(1, 2147483647).Draw(t, "lease"),
			Campaign: rapid.StringMatching(`[A-Za-z0-9][A-Za-z0-9._-]{0,20}`).Draw(t, "campaign"),
			GPUs:     rapid.IntRange(1, 999999).Draw(t, "gpus"),
			Expires:  rapid.Int64Range(1, 999999999999).Draw(t, "expires"),
			User:     rapid.OneOf(rapid.Just(""), rapid.StringMatching(userPattern)).Draw(t, "user"),
			Account:  rapid.OneOf(rapid.Just(""), rapid.StringMatching(accountPattern)).Draw(t, "account"),
		}
		key := []byte(rapid.StringN(MinKeyBytes, 64, -1).Draw(t, "key"))
		tok := Sign(key, l)
		got, err := Parse(tok)
		require.NoError(t, err)
		require.Equal(t, l, got)
		v, err := Verify(key, tok, time.Unix(l.Expires-1, 0))
		require.NoError(t, err)
		require.Equal(t, l, v)
		_, err = Verify(append([]byte("x"), key...), tok, time.Unix(l.Expires-1, 0))
		require.ErrorIs(t, err, ErrForged)
		_, err = Verify(key, tok, time.Unix(l.Expires, 0))
		require.ErrorIs(t, err, ErrExpired)
		w := WCKey(l)
		require.Equal(t, w, strings.ToLower(w))
		require.True(t, strings.HasPrefix(w, "bursar:"))
	})
}

// By hand: the WcKey of lease 7 of campaign Sci, 4 GPUs, ending at 100.
func TestWCKeyByHand(t *testing.T) {
	assert.Equal(t, "bursar:7:sci:4:100", WCKey(Lease{Lease: 7, Campaign: "Sci", GPUs: 4, Expires: 100}))
}

// Parse never panics, and what it accepts signs back to the same fields.
func FuzzParse(f *testing.F) {
	f.Add(Sign([]byte("0123456789abcdef0123456789abcdef"), Lease{Lease: 1, Campaign: "sci", GPUs: 2, Expires: 3}))
	f.Add("bursar1:1:sci:2:3:")
	f.Add("bursar2:1:sci:2:3:alice:sci:")
	f.Add("x; rm -rf /")
	f.Fuzz(func(t *testing.T, tok string) {
		l, err := Parse(tok)
		if err != nil {
			return
		}
		again, err := Parse(Sign([]byte("k"), l))
		require.NoError(t, err)
		require.Equal(t, l, again)
	})
}

// One token, one job: the first claim of a lease wins and the second is
// refused, another lease (or the same id of another campaign) is free,
// and the records of leases over for a minute are swept as new ones come.
func TestClaim(t *testing.T) {
	dir := t.TempDir()
	now := time.Unix(1000, 0)
	a := Lease{Lease: 1, Campaign: "Sci", GPUs: 2, Expires: 1100}
	require.NoError(t, Claim(dir, a, now))
	err := Claim(dir, a, now)
	require.ErrorIs(t, err, ErrUsed)
	assert.Contains(t, err.Error(), "lease 1 of campaign Sci admitted a job already")
	require.NoError(t, Claim(dir, Lease{Lease: 2, Campaign: "Sci", GPUs: 2, Expires: 1100}, now))
	require.NoError(t, Claim(dir, Lease{Lease: 1, Campaign: "storm", GPUs: 2, Expires: 1100}, now))
	old := Lease{Lease: 3, Campaign: "sci", GPUs: 1, Expires: 930}
	require.NoError(t, Claim(dir, old, time.Unix(900, 0)))
	require.NoError(t, Claim(dir, Lease{Lease: 4, Campaign: "sci", GPUs: 1, Expires: 1100}, now))
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	assert.ElementsMatch(t, []string{"1100.sci.1", "1100.sci.2", "1100.storm.1", "1100.sci.4"}, names, "lease 3 ended 70 s ago: swept")

	key := []byte("0123456789abcdef0123456789abcdef")
	keyFile := filepath.Join(t.TempDir(), "key")
	require.NoError(t, os.WriteFile(keyFile, key, 0o600))
	tok := Sign(key, Lease{Lease: 9, Campaign: "sci", GPUs: 1, Expires: 2000})
	line, ok := Check(keyFile, tok, dir, nil, now)
	assert.True(t, ok, line)
	line, ok = Check(keyFile, tok, dir, nil, now)
	assert.False(t, ok)
	assert.Equal(t, "refuse: lease 9 of campaign sci admitted a job already: one lease token admits one job (ask for another lease)", line)
	line, ok = Check(keyFile, tok, "", nil, now)
	assert.True(t, ok, "without a folder a token admits jobs until it expires: %s", line)
}

// TestMarkReleased: a released lease's token is refused by the claim
// (before or after it admitted a job), and other leases are not.
func TestMarkReleased(t *testing.T) {
	dir := t.TempDir()
	now := time.Unix(1000, 0)
	a := Lease{Lease: 1, Campaign: "Sci", GPUs: 2, Expires: 1100}
	require.NoError(t, MarkReleased(dir, a))
	err := Claim(dir, a, now)
	require.ErrorIs(t, err, ErrReleased)
	assert.EqualError(t, err, "lease 1 of campaign Sci was released: a released lease's token admits no job (ask for another lease)")
	b := Lease{Lease: 2, Campaign: "Sci", GPUs: 2, Expires: 1100}
	require.NoError(t, Claim(dir, b, now))
	require.NoError(t, MarkReleased(dir, b))
	require.ErrorIs(t, Claim(dir, b, now), ErrReleased)
	require.NoError(t, Claim(dir, Lease{Lease: 1, Campaign: "Sci", GPUs: 2, Expires: 1160}, now), "another token (expiry) of another lease")
}

// By hand: the time limit is the lease's whole minutes left, counting
// SubmitSlack (5 s): a 10-minute lease submitted 0.3 s (whole seconds: 1 s)
// after its grant gets 10 minutes, 6 s after it 9; under a minute left is
// refused before the token is spent.
func TestLimitMinutes(t *testing.T) {
	l := Lease{Lease: 4, Campaign: "sci", GPUs: 1, Expires: 1600, User: "u"}
	for _, c := range []struct {
		now  int64
		want int64
	}{{1000, 10}, {1001, 10}, {1005, 10}, {1006, 9}, {1540, 1}, {1544, 1}, {1545, 1}, {1546, 0}, {1600, 0}} {
		assert.Equal(t, c.want, LimitMinutes(l, time.Unix(c.now, 0)), "at %d", c.now)
	}
	key := []byte("0123456789abcdef0123456789abcdef")
	keyFile := filepath.Join(t.TempDir(), "key")
	require.NoError(t, os.WriteFile(keyFile, key, 0o600))
	tok := Sign(key, l)
	once := t.TempDir()
	line, ok := Check(keyFile, tok, once, &Job{CPUs: 1, User: "u"}, time.Unix(1550, 0))
	assert.False(t, ok)
	assert.Equal(t, "refuse: lease 4 of campaign sci has 50 s left, under the whole minute Slurm's time limits count "+
		"(ask for a new lease: bursar lease --slurm leases last whole minutes)", line)
	ents, err := os.ReadDir(once)
	require.NoError(t, err)
	assert.Empty(t, ents, "refused before the token is spent")
	line, ok = Check(keyFile, tok, once, &Job{CPUs: 1, User: "u"}, time.Unix(1001, 0))
	assert.True(t, ok, line)
	assert.Equal(t, "ok 4 sci 1 599 sci 1600 10", line)
}
