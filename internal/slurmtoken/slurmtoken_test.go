package slurmtoken

import (
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
