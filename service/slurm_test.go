package service_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/bursar-hpc/bursar/client"
	"github.com/bursar-hpc/bursar/service"
)

var slurmKey = []byte("0123456789abcdef0123456789abcdef")

// TestSlurmTokenByHand: the token is the payload and its HMAC-SHA256 in
// hex, as `printf 'bursar2:7:sci:4:1800000000:alice:sci' | openssl dgst
// -sha256 -hmac 0123456789abcdef0123456789abcdef` prints it.
func TestSlurmTokenByHand(t *testing.T) {
	l := service.SlurmLease{Lease: 7, Campaign: "sci", GPUs: 4, Expires: 1800000000, User: "alice", Account: "sci"}
	tok := service.SignSlurmToken(slurmKey, l)
	assert.Equal(t, "bursar2:7:sci:4:1800000000:alice:sci:b49fd4346dc0bbeb145300ec3d65aa5796936b9e4ab90d4be8d83bd52f23a9b7", tok)
}

func TestSlurmTokenVerify(t *testing.T) {
	now := time.Unix(1700000000, 0)
	l := service.SlurmLease{Lease: 7, Campaign: "Sci.2_a-b", GPUs: 4, Expires: now.Unix() + 60, User: "bob", Account: "sci.2_a-b"}
	tok := service.SignSlurmToken(slurmKey, l)
	got, err := service.VerifySlurmToken(slurmKey, tok, now)
	require.NoError(t, err)
	assert.Equal(t, l, got)

	_, err = service.VerifySlurmToken(slurmKey, tok, now.Add(60*time.Second))
	assert.ErrorIs(t, err, service.ErrSlurmTokenExpired, "expired at its expiry second")
	_, err = service.VerifySlurmToken([]byte("another key, 32 bytes or longer.."), tok, now)
	assert.ErrorIs(t, err, service.ErrSlurmTokenForged)
	bigger := strings.Replace(tok, ":4:", ":16:", 1)
	_, err = service.VerifySlurmToken(slurmKey, bigger, now)
	assert.ErrorIs(t, err, service.ErrSlurmTokenForged, "a token whose size was raised")
	// A user or account another user could be taken for is refused too;
	// a bursar1 token (no user, no account: before issue 35) is not one.
	for _, bad := range []string{"", "bursar2", tok + "0", "bursar1" + tok[7:], "bursar2:7:sci:4:1800000000:xyz", "bursar2:7:s ci:4:1::sci:" + strings.Repeat("0", 64),
		"bursar2:7:sci:4:1:a b:sci:" + strings.Repeat("0", 64), "bursar2:7:sci:4:1:-a:sci:" + strings.Repeat("0", 64),
		"bursar1:7:sci:4:1800000000:565909cbc3e68882a45641e00c69ff8dc2efdc38ff50721d97d5052bace04c97"} {
		_, err = service.VerifySlurmToken(slurmKey, bad, now)
		assert.ErrorIs(t, err, service.ErrSlurmTokenMalformed, bad)
	}
}

// TestSlurmTokenRoundTripProperty: every lease signs to a token that
// verifies to the same lease before its expiry, and changing any one
// character of it makes it fail.
func TestSlurmTokenRoundTripProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		l := service.SlurmLease{
			Lease:    rapid.IntRange(1, 2147483647).Draw(t, "lease"),
			Campaign: rapid.StringMatching(`[A-Za-z0-9][A-Za-z0-9._-]{0,63}`).Draw(t, "campaign"),
			GPUs:     rapid.IntRange(1, 999999).Draw(t, "gpus"),
			Expires:  rapid.Int64Range(1, 999999999999).Draw(t, "expires"),
			User:     rapid.StringMatching(`[A-Za-z0-9_][A-Za-z0-9._-]{0,63}`).Draw(t, "user"),
			Account:  rapid.StringMatching(`[a-z0-9][a-z0-9._-]{0,63}`).Draw(t, "account"),
		}
		tok := service.SignSlurmToken(slurmKey, l)
		now := time.Unix(l.Expires-1, 0)
		got, err := service.VerifySlurmToken(slurmKey, tok, now)
		if err != nil || got != l {
			t.Fatalf("round trip: %v %+v", err, got)
		}
		i := rapid.IntRange(0, len(tok)-1).Draw(t, "i")
		c := rapid.ByteRange('0', 'z').Draw(t, "c")
		if c == tok[i] {
			return
		}
		altered := tok[:i] + string(c) + tok[i+1:]
		if _, err := service.VerifySlurmToken(slurmKey, altered, now); err == nil {
			t.Fatalf("altered token %q verified", altered)
		}
	})
}

func FuzzVerifySlurmToken(f *testing.F) {
	f.Add(service.SignSlurmToken(slurmKey, service.SlurmLease{Lease: 1, Campaign: "a", GPUs: 1, Expires: 2}))
	f.Add("bursar1:1:a:1:2:")
	f.Fuzz(func(t *testing.T, tok string) {
		l, err := service.VerifySlurmToken(slurmKey, tok, time.Unix(1, 0))
		if err == nil && service.SignSlurmToken(slurmKey, l) != strings.TrimSpace(tok) {
			t.Fatalf("%q verified but is not the lease's token", tok)
		}
	})
}

// TestSlurmTokenEndpoint: a campaign gets a token for its own lease, whose
// wall expiry is the lease's broker expiry at the tick rate; none without
// a key, none for another's lease.
func TestSlurmTokenEndpoint(t *testing.T) {
	e := newEnv(t, service.Options{Speed: 10, SlurmKey: slurmKey})
	admin := e.admin
	ctx := context.Background()
	_, err := admin.Register(ctx, client.CampaignSpec{Name: "Sci", Budget: 1e9, Guaranteed: 4, Sustained: 8, BurstCeiling: 8, Bucket: 1e6, Class: client.ClassDeadline})
	require.NoError(t, err)
	// Another campaign's request comes first: Sci's lease is still its
	// lease 1 (the broker's 2), and the token carries Sci's id (ids.go).
	_, err = admin.Register(ctx, client.CampaignSpec{Name: "Other", Budget: 1e9, Guaranteed: 0, Sustained: 8, BurstCeiling: 8, Bucket: 1e6, Class: client.ClassDeadline})
	require.NoError(t, err)
	_, err = admin.Request(ctx, "Other", client.LeaseRequest{GPUs: 1, Duration: 100})
	require.NoError(t, err)
	acc, err := admin.Request(ctx, "Sci", client.LeaseRequest{GPUs: 2, Duration: 100})
	require.NoError(t, err)
	w, err := admin.AwaitGrant(ctx, "Sci", acc.RequestID)
	require.NoError(t, err)
	require.Equal(t, 1, w.Lease.ID)
	before := time.Now()
	st, err := admin.SlurmTokenFor(ctx, "Sci", w.Lease.ID, "alice")
	require.NoError(t, err)
	assert.Equal(t, "sci", st.Account)
	assert.Equal(t, "alice", st.User)
	assert.Equal(t, 2, st.GPUs)
	// 100 broker s at 10 a second: about 10 s from now, never later.
	assert.LessOrEqual(t, st.ExpiresUnix, time.Now().Add(10*time.Second).Unix())
	assert.GreaterOrEqual(t, st.ExpiresUnix, before.Add(8*time.Second).Unix()-1)
	l, err := service.VerifySlurmToken(slurmKey, st.Token, time.Now())
	require.NoError(t, err)
	assert.Equal(t, service.SlurmLease{Lease: w.Lease.ID, Campaign: "Sci", GPUs: 2, Expires: st.ExpiresUnix, User: "alice", Account: "sci"}, l,
		"the token names its user and account")
	// A token names a Unix user, one the gate can compare.
	_, err = admin.SlurmTokenFor(ctx, "Sci", w.Lease.ID, "")
	assert.ErrorContains(t, err, "422")
	_, err = admin.SlurmTokenFor(ctx, "Sci", w.Lease.ID, "a b;c")
	assert.ErrorContains(t, err, "422")

	_, err = admin.SlurmToken(ctx, "Sci", w.Lease.ID+1)
	assert.ErrorIs(t, err, client.ErrNotFound)

	// The enforcer's question (serve --slurm-enforce) takes the token's
	// lease id, the campaign's own, not the broker's.
	held, notice, err := e.svc.SlurmLeaseHeld(ctx, "Sci", l.Lease)
	require.NoError(t, err)
	assert.True(t, held, "Sci holds its lease 1 (the broker's 2)")
	assert.False(t, notice)
	held, _, err = e.svc.SlurmLeaseHeld(ctx, "Sci", 2)
	require.NoError(t, err)
	assert.False(t, held, "Sci has no lease 2")
	held, _, err = e.svc.SlurmLeaseHeld(ctx, "Nobody", 1)
	require.NoError(t, err)
	assert.False(t, held)
	_, err = admin.ReleaseLease(ctx, "Sci", w.Lease.ID)
	require.NoError(t, err)
	held, _, err = e.svc.SlurmLeaseHeld(ctx, "Sci", l.Lease)
	require.NoError(t, err)
	assert.False(t, held, "released")

	nokey := newEnv(t, service.Options{Speed: 10})
	_, err = nokey.admin.Register(ctx, client.CampaignSpec{Name: "Sci", Budget: 1e9, Guaranteed: 4, Sustained: 8, BurstCeiling: 8, Bucket: 1e6, Class: client.ClassDeadline})
	require.NoError(t, err)
	_, err = nokey.admin.SlurmToken(ctx, "Sci", 1)
	assert.ErrorIs(t, err, client.ErrConflict, "no key: no token")
	_, err = service.New(service.Options{Broker: testConfig(), AdminToken: adminToken, SlurmKey: []byte("short")})
	assert.ErrorContains(t, err, "Slurm key must be at least 32 bytes")
}

// A lease is bound to the first Slurm job the enforcer reports on it, in
// the journal: a second job is answered with the first one's id, the
// campaign's journal shows one slurm-job record with its wall time and
// the campaign's own lease id, and a restart keeps the binding.
func TestBindSlurmJob(t *testing.T) {
	ctx := context.Background()
	opts := serviceOptionsWithDir(t)
	opts.AdmitOnRequest = true
	e := newEnv(t, opts)
	_, err := e.admin.Register(ctx, client.CampaignSpec{Name: "Other", Budget: 1e9, Guaranteed: 0, Sustained: 8, BurstCeiling: 8, Bucket: 1e6, Class: client.ClassDeadline})
	require.NoError(t, err)
	_, err = e.admin.Request(ctx, "Other", client.LeaseRequest{GPUs: 1, Duration: 100})
	require.NoError(t, err)
	sci := e.register(t, spec("sci"))
	acc, err := sci.Request(ctx, "sci", client.LeaseRequest{GPUs: 2, Duration: 100})
	require.NoError(t, err)
	require.Equal(t, 1, acc.RequestID)

	bound, err := e.svc.BindSlurmJob(ctx, "sci", 1, "42")
	require.NoError(t, err)
	assert.Equal(t, "42", bound)
	bound, err = e.svc.BindSlurmJob(ctx, "sci", 1, "42")
	require.NoError(t, err)
	assert.Equal(t, "42", bound, "the same job again: nothing new")
	bound, err = e.svc.BindSlurmJob(ctx, "sci", 1, "43")
	require.NoError(t, err)
	assert.Equal(t, "42", bound, "a second job on the lease gets the first one's id")
	_, err = e.svc.BindSlurmJob(ctx, "sci", 2, "44")
	assert.Error(t, err, "sci has no lease 2")
	_, err = e.svc.BindSlurmJob(ctx, "sci", 1, "42; rm")
	assert.Error(t, err)

	j, err := sci.Journal(ctx, "sci", client.Page{Limit: 100})
	require.NoError(t, err)
	var jobs []string
	for _, r := range j.Records {
		if strings.Contains(string(r.Record), `"slurm-job"`) {
			jobs = append(jobs, string(r.Record))
			assert.NotZero(t, r.Wall)
		}
	}
	assert.Equal(t, []string{`{"t":0,"event":"slurm-job","lease":1,"campaign":"sci","job":"42"}`}, jobs, "the campaign's own lease id (the broker's is 2)")

	require.NoError(t, e.svc.Close())
	opts.Logger = nil
	e2 := newEnv(t, opts)
	bound, err = e2.svc.BindSlurmJob(ctx, "sci", 1, "43")
	require.NoError(t, err)
	assert.Equal(t, "42", bound, "replayed from the journal")
}
