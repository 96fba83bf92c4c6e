package service

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bursar-hpc/bursar/api"
	"github.com/bursar-hpc/bursar/policy"
)

// dirBytes is the sum of the sizes of the files in dir (the bound's
// measure: a hard-linked file counts once per name).
func dirBytes(t *testing.T, dir string) int64 {
	t.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	var n int64
	for _, e := range ents {
		if st, err := e.Info(); err == nil && st.Mode().IsRegular() {
			n += st.Size()
		}
	}
	return n
}

// fastDataDir is a data directory on tmpfs where there is one (each
// answer waits for an fsync, which there costs nothing; the bound is
// about bytes, not the disk), else under the test's temporary directory.
func fastDataDir(t *testing.T) string {
	t.Helper()
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		if dir, err := os.MkdirTemp("/dev/shm", "bursar-disk-"); err == nil {
			t.Cleanup(func() { os.RemoveAll(dir) })
			return filepath.Join(dir, "data")
		}
	}
	return filepath.Join(t.TempDir(), "data")
}

// TestDiskBoundUnderWriteSpam (issue 34 §6): four tenants write at their
// rate limit, on a simulated clock of one broker second per simulated
// wall-clock second, until 360,000 writes were taken — requests (of which
// the caps refuse many: the pool is small and requests pile up),
// withdrawals, releases and consumes — and the data directory never
// holds more than DiskBound, checked after every simulated second and
// at the end. A restart then recovers exactly the state the service
// had, from the last of the snapshots made meanwhile.
func TestDiskBoundUnderWriteSpam(t *testing.T) {
	if testing.Short() {
		t.Skip("360,000 writes: not in -short")
	}
	const (
		tenants = 4
		target  = 360000
	)
	dir := fastDataDir(t)
	// Retention and caps small enough that the retained records and the
	// pending requests are full within the first half, so that the
	// snapshot's size shows whatever else grows.
	opts := Options{Broker: testCfg(), DataDir: dir, AdminToken: testAdmin, SnapshotBytes: 256 << 10,
		JournalKeep: 500, CampaignJournalKeep: 100, GrantKeep: 50, MaxLeases: 256}
	s, err := New(opts)
	require.NoError(t, err)
	filled := s.opts // the defaults filled in
	bound := DiskBound(filled, tenants)
	ctx := context.Background()
	names := make([]string, tenants)
	for i := range names {
		names[i] = fmt.Sprintf("t%d", i)
		env := policy.Envelope{Name: names[i], Budget: 1e9, Sustained: 16, BurstCeiling: 64, Bucket: 1e5, Class: policy.AgentBurst,
			IO: &policy.Flow{Rate: 1, Bucket: 5, Ceiling: 2}}
		require.NoError(t, s.withState(ctx, func(tx *txn) error {
			_, err := tx.apply(&op{Op: opRegister, Env: &env, TokenHash: hexHash(hashToken(names[i]))})
			return err
		}))
	}
	rng := rand.New(rand.NewPCG(7, 34))
	clock := time.Unix(1_800_000_000, 0)
	writes, refused, peak := 0, map[int]int{}, int64(0)
	var firstHalf, secondHalf int64 // the largest snapshot in each half
	// filed counts each tenant's accepted requests: its own ids, for
	// the withdrawals and releases it makes.
	filed := make([]int, tenants)
	status := func(err error) int {
		var se huma.StatusError
		if errors.As(err, &se) {
			return se.GetStatus()
		}
		require.NoError(t, err)
		return http.StatusOK
	}
	for writes < target {
		clock = clock.Add(time.Second)
		for c := range tenants {
			for writes < target {
				if ok, _ := s.writes.allow(policy.CampaignID(c), clock); !ok {
					break // the rate limit: this tenant's second is spent
				}
				writes++
				var err error
				// Recent ids: mostly pending requests or held leases, so
				// that most writes change something and are journaled.
				recent := func() int { return max(1, filed[c]-rng.IntN(min(filed[c], 64))) }
				switch k := rng.IntN(100); {
				case k < 45:
					_, err = s.request(ctx, &requestInput{Campaign: names[c], Body: api.LeaseRequest{
						GPUs: 1 + rng.IntN(8), Duration: 1 + rng.IntN(30)}})
					if err == nil {
						filed[c]++
					}
				case k < 80 && filed[c] > 0:
					_, err = s.withdraw(ctx, &withdrawInput{Campaign: names[c], Request: recent()})
				case k < 92 && filed[c] > 0:
					_, err = s.releaseLease(ctx, &releaseLeaseInput{Campaign: names[c], Lease: recent()})
				default:
					_, err = s.consume(ctx, &consumeInput{Campaign: names[c], Body: api.ConsumeRequest{IO: rng.Float64(), Inference: 10}})
				}
				if code := status(err); code != http.StatusOK {
					refused[code]++
				}
				if n := dirBytes(t, dir); n > bound {
					require.LessOrEqual(t, n, bound, "after %d writes the data directory holds %d bytes, above the bound %d", writes, n, bound)
				} else {
					peak = max(peak, n)
				}
			}
		}
		require.NoError(t, s.Tick())
		// The snapshot does not grow with the service's age: in the
		// second half it stays within a tenth above the first half's
		// largest (an operation history grew by the half again).
		if st, err := os.Stat(filepath.Join(dir, snapName)); err == nil {
			if writes <= target/2 {
				firstHalf = max(firstHalf, st.Size())
			} else {
				secondHalf = max(secondHalf, st.Size())
			}
		}
	}
	s.snapWG.Wait()
	want := fingerprint(s)
	t.Logf("%d writes in %d simulated seconds, refused %v; %d snapshots (largest %d and %d bytes in each half, bound %d); data directory at most %d bytes (bound %d), %d at the end",
		writes, s.Now(), refused, s.snapshots.Load(), firstHalf, secondHalf, snapshotBound(filled, tenants), peak, bound, dirBytes(t, dir))
	assert.Equal(t, target, writes)
	assert.Positive(t, refused[http.StatusTooManyRequests], "the caps refused some")
	assert.GreaterOrEqual(t, s.snapshots.Load(), int64(10), "compaction ran again and again")
	assert.LessOrEqual(t, secondHalf, firstHalf+firstHalf/10, "the snapshot grows with age: %d bytes in the first half, %d in the second", firstHalf, secondHalf)
	assert.LessOrEqual(t, max(firstHalf, secondHalf), snapshotBound(filled, tenants))
	require.NoError(t, s.Close())
	require.LessOrEqual(t, dirBytes(t, dir), bound)

	s2, err := New(opts)
	require.NoError(t, err)
	defer s2.Close()
	assert.Positive(t, s2.Report().Snapshot, "the restart loaded a snapshot")
	assert.Equal(t, want, fingerprint(s2), "a restart recovers exactly the acknowledged state")
	checkRequestIDs(t, s2)
}

// TestLeaseCap: a campaign's leases and pending requests together stop
// at MaxLeases: a request beyond is 429 naming the cap and the flag, and
// a release makes room again.
func TestLeaseCap(t *testing.T) {
	s, err := New(Options{Broker: testCfg(), AdminToken: testAdmin, MaxLeases: 3})
	require.NoError(t, err)
	defer s.Close()
	ctx := context.Background()
	env := policy.Envelope{Name: "sci", Budget: 1e9, Sustained: 64, BurstCeiling: 64, Bucket: 1e6, Class: policy.AgentBurst}
	require.NoError(t, s.withState(ctx, func(tx *txn) error {
		_, err := tx.apply(&op{Op: opRegister, Env: &env, TokenHash: hexHash(hashToken("sci"))})
		return err
	}))
	req := func() error {
		_, err := s.request(ctx, &requestInput{Campaign: "sci", Body: api.LeaseRequest{GPUs: 1, Duration: 1000}})
		return err
	}
	for range 3 {
		require.NoError(t, req())
	}
	var se huma.StatusError
	err = req()
	require.ErrorAs(t, err, &se)
	assert.Equal(t, http.StatusTooManyRequests, se.GetStatus())
	assert.Contains(t, err.Error(), "campaign sci holds 0 leases and has 3 pending requests, the most the service keeps per campaign (3, serve --max-leases)")
	require.NoError(t, s.Tick()) // the three are granted: leases now
	err = req()
	require.ErrorAs(t, err, &se)
	assert.Contains(t, err.Error(), "campaign sci holds 3 leases and has 0 pending requests")
	_, err = s.releaseLease(ctx, &releaseLeaseInput{Campaign: "sci", Lease: 2})
	require.NoError(t, err)
	require.NoError(t, req(), "a release makes room")
}

// TestCompactionCrashPoints: a crash before any step of a compaction
// (stopped there, then the service closed as a crash leaves the files)
// loses nothing acknowledged: the restart shows exactly the state the
// service had, finishes the snapshot, and a second restart from that
// snapshot shows it again.
func TestCompactionCrashPoints(t *testing.T) {
	for step := 1; step <= 5; step++ {
		t.Run(fmt.Sprint("before step ", step), func(t *testing.T) {
			dir := t.TempDir()
			opts := Options{Broker: testCfg(), DataDir: dir, AdminToken: testAdmin, SnapshotEvery: 25}
			s, err := New(opts)
			require.NoError(t, err)
			compactions := 0
			s.compactHook = func(n int) bool {
				// The second compaction stops before step n for good:
				// no rotation overwrites its sealed segment.
				if n == 1 {
					compactions++
				}
				return compactions != 2 || n != step
			}
			workload(t, s)
			s.snapWG.Wait()
			require.Equal(t, int64(1), s.snapshots.Load(), "one compaction finished, the next stopped")
			want := fingerprint(s)
			require.NoError(t, s.Close())
			_, err = os.Stat(filepath.Join(dir, walOldName))
			require.NoError(t, err, "the stopped compaction left the sealed segment")

			s2, err := New(opts)
			require.NoError(t, err)
			assert.Equal(t, want, fingerprint(s2), "restart after a crash before step %d", step)
			s2.snapWG.Wait()
			if step <= 3 {
				assert.Equal(t, int64(1), s2.snapshots.Load(), "the start finished the snapshot")
			} else {
				assert.Zero(t, s2.snapshots.Load(), "the snapshot was written: the start only moves the covered segment aside")
			}
			require.NoError(t, s2.Close())
			_, err = os.Stat(filepath.Join(dir, walOldName))
			assert.True(t, os.IsNotExist(err), "no sealed segment left")

			s3, err := New(opts)
			require.NoError(t, err)
			defer s3.Close()
			assert.Equal(t, want, fingerprint(s3), "restart from the finished snapshot")
			assert.Positive(t, s3.Report().Snapshot)
		})
	}
}
