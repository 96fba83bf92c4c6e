package service

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/bursar-hpc/bursar/policy"
)

// randomOps draws a workload: registrations, requests, withdrawals,
// releases, consumes and runs of ticks long enough to fold.
func randomOps(t *rapid.T) []*op {
	var ops []*op
	camps, reqs := 0, 0
	for i := range rapid.IntRange(1, 60).Draw(t, "steps") {
		switch k := rapid.IntRange(0, 9).Draw(t, fmt.Sprint("kind", i)); {
		case k == 0 || camps == 0:
			env := policy.Envelope{Name: fmt.Sprintf("c%d", camps), Budget: rapid.Float64Range(0.01, 50).Draw(t, "budget"),
				Guaranteed: rapid.IntRange(0, 8).Draw(t, "g"), Sustained: 8, BurstCeiling: 32, Bucket: rapid.Float64Range(0, 500).Draw(t, "bucket"),
				Class: policy.Class(rapid.IntRange(0, 3).Draw(t, "class")),
				IO:    &policy.Flow{Rate: 1, Bucket: 5, Ceiling: 2}}
			ops = append(ops, &op{Op: opRegister, Env: &env, TokenHash: hexHash(hashToken(env.Name))})
			camps++
		case k <= 3:
			reqs++
			ops = append(ops, &op{Op: opRequest, C: rapid.IntRange(0, camps-1).Draw(t, "c"),
				GPUs: rapid.IntRange(1, 40).Draw(t, "gpus"), Duration: rapid.IntRange(1, 30).Draw(t, "dur")})
		case k == 4:
			ops = append(ops, &op{Op: opReleaseAll, C: rapid.IntRange(0, camps-1).Draw(t, "c")})
		case k == 5:
			ops = append(ops, &op{Op: opConsume, C: rapid.IntRange(0, camps-1).Draw(t, "c"),
				IO: rapid.Float64Range(0, 4).Draw(t, "io"), Inf: rapid.Float64Range(0, 100).Draw(t, "inf")})
		case k == 6 && reqs > 0:
			// A withdrawal of a request that is no longer pending
			// (or another campaign's) is refused and leaves no record.
			ops = append(ops, &op{Op: opWithdraw, C: rapid.IntRange(0, camps-1).Draw(t, "c"),
				Lease: rapid.IntRange(1, reqs).Draw(t, "req")})
		case k == 7 && reqs > 0:
			// A Slurm release or hold of a lease not held is refused
			// and leaves no record; one held marks the lease over.
			o := opSlurmRelease
			if rapid.Bool().Draw(t, "hold") {
				o = opSlurmHold
			}
			ops = append(ops, &op{Op: o, C: rapid.IntRange(0, camps-1).Draw(t, "c"),
				Lease: rapid.IntRange(1, reqs).Draw(t, "lease"), Duration: rapid.IntRange(1, 40).Draw(t, "for")})
		default:
			for range rapid.IntRange(1, 25).Draw(t, "ticks") {
				ops = append(ops, &op{Op: opTick})
			}
		}
	}
	return ops
}

// runOps applies ops through the service as handlers do.
func runOps(t require.TestingT, s *Service, ops []*op) {
	for _, o := range ops {
		o := *o // apply stamps the time
		if o.Op == opTick {
			require.NoError(t, s.Tick())
			continue
		}
		// A refused operation (overbooked, nothing to release, no
		// budget) leaves no record, alike on both services.
		err := s.withState(context.Background(), func(tx *txn) error { _, err := tx.apply(&o); return err })
		require.False(t, errors.Is(err, errWALFailed), "%v", err)
	}
}

// TestSnapshotReplayProperty: a service that snapshots (every few records,
// so several snapshots happen) and one that never does receive the same
// operations; after a restart both show exactly the state the live service
// had: snapshot + tail replay = full replay = the live state.
func TestSnapshotReplayProperty(t *testing.T) {
	// Each case fsyncs two journals per operation (≈ 0.4 s a case on a
	// loaded machine), so the default is 25 cases rather than rapid's 100;
	// -rapid.checks given on the command line wins.
	if f := flag.Lookup("rapid.checks"); f != nil && f.Value.String() == f.DefValue {
		require.NoError(t, f.Value.Set("25"))
		defer func() { _ = f.Value.Set(f.DefValue) }()
	}
	rapid.Check(t, func(rt *rapid.T) {
		ops := randomOps(rt)
		every := rapid.IntRange(1, 40).Draw(rt, "every")
		dirA, dirB := t.TempDir(), t.TempDir()
		// Small retention, so that the retained records wrap around
		// (their sequence numbers must survive a snapshot).
		keep := Options{JournalKeep: 7, CampaignJournalKeep: 5, GrantKeep: 3}
		a, err := New(Options{Broker: testCfg(), DataDir: dirA, AdminToken: testAdmin, SnapshotEvery: every,
			JournalKeep: keep.JournalKeep, CampaignJournalKeep: keep.CampaignJournalKeep, GrantKeep: keep.GrantKeep})
		require.NoError(rt, err)
		b, err := New(Options{Broker: testCfg(), DataDir: dirB, AdminToken: testAdmin, SnapshotEvery: -1,
			JournalKeep: keep.JournalKeep, CampaignJournalKeep: keep.CampaignJournalKeep, GrantKeep: keep.GrantKeep})
		require.NoError(rt, err)
		runOps(rt, a, ops)
		runOps(rt, b, ops)
		live := fingerprint(a)
		require.Equal(rt, live, fingerprint(b))
		checkRequestIDs(rt, a)
		require.NoError(rt, a.Close())
		require.NoError(rt, b.Close())

		a2, err := New(Options{Broker: testCfg(), DataDir: dirA, AdminToken: testAdmin, SnapshotEvery: every,
			JournalKeep: keep.JournalKeep, CampaignJournalKeep: keep.CampaignJournalKeep, GrantKeep: keep.GrantKeep})
		require.NoError(rt, err)
		defer a2.Close()
		b2, err := New(Options{Broker: testCfg(), DataDir: dirB, AdminToken: testAdmin, SnapshotEvery: -1,
			JournalKeep: keep.JournalKeep, CampaignJournalKeep: keep.CampaignJournalKeep, GrantKeep: keep.GrantKeep})
		require.NoError(rt, err)
		defer b2.Close()
		assert.Equal(rt, live, fingerprint(b2), "full replay")
		assert.Equal(rt, live, fingerprint(a2), "snapshot + tail replay")
		checkRequestIDs(rt, a2)
		if rep := a2.Report(); a.snapshots.Load() > 0 {
			assert.Positive(rt, rep.Snapshot, "the restart loaded a snapshot")
			data, err := os.ReadFile(filepath.Join(dirA, snapName))
			require.NoError(rt, err)
			assert.Equal(rt, 3, bytes.Count(data, []byte("\n")), "a snapshot is a header, one state record and the trailer")
		}
		// Both go on alike: whatever the snapshot left out would show
		// in what the same operations do next.
		more := randomOps(rt)
		for _, o := range more {
			if o.Op == opRegister {
				o.Env.Name += "-more" // names are unique
			}
		}
		runOps(rt, a2, more)
		runOps(rt, b2, more)
		assert.Equal(rt, fingerprint(b2), fingerprint(a2), "after more operations")
		_, err = os.Stat(filepath.Join(dirB, snapName))
		assert.True(rt, os.IsNotExist(err))
	})
}

// TestSnapshotCrashPoints: every state a crash can leave between rotation
// and the removal of the sealed segment replays to the same state.
func TestSnapshotCrashPoints(t *testing.T) {
	dir := t.TempDir()
	s, err := New(Options{Broker: testCfg(), DataDir: dir, AdminToken: testAdmin, SnapshotEvery: 30})
	require.NoError(t, err)
	workload(t, s)
	s.snapWG.Wait()
	want := fingerprint(s)
	require.NoError(t, s.Close())
	require.Positive(t, s.snapshots.Load())
	st, err := os.Stat(filepath.Join(dir, snapName))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm(), "a snapshot holds token hashes: private, like the journal")

	// State 1: rotated, snapshot not yet written: bursar.wal.old holds
	// the records the snapshot would cover. Rebuild it from a never-
	// snapshotting copy of the same history.
	full := t.TempDir()
	f, err := New(Options{Broker: testCfg(), DataDir: full, AdminToken: testAdmin, SnapshotEvery: -1})
	require.NoError(t, err)
	workload(t, f)
	require.Equal(t, want, fingerprint(f))
	require.NoError(t, f.Close())

	// State 2: snapshot written, sealed segment not removed. Fake it by
	// copying the live segment's predecessor: a covered segment must be
	// skipped and removed.
	data, err := os.ReadFile(filepath.Join(full, walName))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, walOldName), data, 0o600))
	s2, err := New(Options{Broker: testCfg(), DataDir: dir, AdminToken: testAdmin})
	require.NoError(t, err)
	assert.Equal(t, want, fingerprint(s2))
	require.NoError(t, s2.Close())
	_, err = os.Stat(filepath.Join(dir, walOldName))
	assert.True(t, os.IsNotExist(err), "the covered segment is removed")

	// State 1 proper: no snapshot, the whole history in bursar.wal.old
	// and an empty live segment that starts after it.
	d1 := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(d1, walOldName), data, 0o600))
	s3, err := New(Options{Broker: testCfg(), DataDir: d1, AdminToken: testAdmin, SnapshotEvery: -1})
	require.NoError(t, err)
	assert.Equal(t, want, fingerprint(s3))
	// The interrupted snapshot is finished at start, so that no later
	// rotation can overwrite the sealed segment.
	s3.snapWG.Wait()
	assert.False(t, s3.wal.sealed.Load())
	require.NoError(t, s3.Close())
	_, err = os.Stat(filepath.Join(d1, walOldName))
	assert.True(t, os.IsNotExist(err), "the sealed segment is folded into a snapshot and removed")
	_, err = os.Stat(filepath.Join(d1, snapName))
	require.NoError(t, err)
	s4, err := New(Options{Broker: testCfg(), DataDir: d1, AdminToken: testAdmin})
	require.NoError(t, err)
	assert.Equal(t, want, fingerprint(s4))
	assert.Positive(t, s4.Report().Snapshot)
	require.NoError(t, s4.Close())

	// A damaged snapshot stops the start.
	snap := filepath.Join(dir, snapName)
	b, err := os.ReadFile(snap)
	require.NoError(t, err)
	b[len(b)/2] ^= 1
	require.NoError(t, os.WriteFile(snap, b, 0o600))
	_, err = New(Options{Broker: testCfg(), DataDir: dir, AdminToken: testAdmin})
	require.ErrorContains(t, err, "checksum mismatch")
}

// TestSnapshotFoldsTicks: a hand-worked fold.
func TestSnapshotFoldsTicks(t *testing.T) {
	var buf bytesBuffer
	sw := newSnapshotWriter(&buf)
	cfg := testCfg()
	sw.line(&op{Op: opOpen, Version: walVersion, Config: &cfg, Base: 6})
	env := policy.Envelope{Name: "x", Budget: 1, Sustained: 1, BurstCeiling: 1, Bucket: 1, Class: policy.Deadline}
	for _, o := range []*op{{Op: opTick, T: 1}, {Op: opTick, T: 2}, {Op: opRegister, T: 2, Env: &env, TokenHash: "h"},
		{Op: opTick, T: 3}, {Op: opTicks, T: 5, N: 2}} {
		sw.add(o)
	}
	require.NoError(t, sw.finish())
	body, err := checkSnapshot(buf.b)
	require.NoError(t, err)
	assert.Equal(t, int64(6), sw.count)
	lines := string(body)
	assert.Contains(t, lines, `{"op":"ticks","t":2,"n":2}`+"\n")
	assert.Contains(t, lines, `{"op":"ticks","t":5,"n":3}`+"\n")
}

type bytesBuffer struct{ b []byte }

func (w *bytesBuffer) Write(p []byte) (int, error) { w.b = append(w.b, p...); return len(p), nil }

// checkRequestIDs checks the per-campaign request ids (ids.go): every id
// the broker handed out belongs to exactly one campaign, in the order the
// broker numbered them, and every pending request and live lease
// translates to its campaign's id and back.
func checkRequestIDs(t require.TestingT, s *Service) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.core
	var all []int
	pruned := false
	for _, cs := range c.camps {
		for n, p := range cs.reqs {
			if n > 0 {
				require.Less(t, cs.reqs[n-1].local, p.local, "%s: %v", cs.name, cs.reqs)
				require.Less(t, cs.reqs[n-1].global, p.global, "%s: %v", cs.name, cs.reqs)
			}
			require.Equal(t, p.local, cs.localID(p.global))
			require.Equal(t, p.global, cs.globalID(p.local))
			all = append(all, p.global)
		}
		require.Zero(t, cs.globalID(0))
		require.Zero(t, cs.globalID(cs.filed+1))
		pruned = pruned || len(cs.reqs) != cs.filed
	}
	sort.Ints(all)
	for i, g := range all {
		if pruned {
			require.True(t, i == 0 || all[i-1] < g, "the broker's id %d is two campaigns'", g)
			continue
		}
		require.Equal(t, i+1, g, "the broker's ids 1..%d are each one campaign's", len(all))
	}
	for _, l := range c.b.Leases() {
		require.NotZero(t, c.camps[l.Campaign].localID(l.ID), "lease %d", l.ID)
	}
	for _, r := range c.b.Pending() {
		require.NotZero(t, c.camps[r.Campaign].localID(r.ID), "request %d", r.ID)
	}
	for _, cs := range c.camps {
		for i := range cs.grants.buf {
			require.NotZero(t, cs.localID(cs.grants.at(i).ev.Lease))
		}
	}
}

// TestSnapshotAtByteBound: a snapshot starts when the live journal has
// grown SnapshotBytes, however few records that is, so the live journal
// stays within the bound plus one record (issue 34 §6); the state
// survives the snapshots.
func TestSnapshotAtByteBound(t *testing.T) {
	dir := t.TempDir()
	const bound = 4096
	opts := Options{Broker: testCfg(), AdminToken: "test-admin-token-0123456789", DataDir: dir,
		SnapshotEvery: 1 << 30, SnapshotBytes: bound}
	s, err := New(opts)
	require.NoError(t, err)
	for range 300 {
		require.NoError(t, s.Tick())
		st, err := os.Stat(filepath.Join(dir, walName))
		require.NoError(t, err)
		require.LessOrEqual(t, st.Size(), int64(bound+200), "the live journal outgrew its bound")
	}
	require.NoError(t, s.Close())
	assert.Positive(t, s.snapshots.Load(), "snapshots made by size alone")
	s2, err := New(opts)
	require.NoError(t, err)
	assert.Equal(t, 300, s2.Now())
	require.NoError(t, s2.Close())
}
