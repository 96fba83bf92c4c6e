package service

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bursar-hpc/bursar/policy"
)

const testAdmin = "internal-admin-token-0123"

func testCfg() policy.Config {
	return policy.Config{Pool: 64, Grace: 5, IOCapacity: 10, InferenceCapacity: 100}
}

func TestRingPage(t *testing.T) {
	r := newRing(3)
	page := func(after int64, limit int) []int64 {
		es, _, _ := r.page(after, limit)
		var out []int64
		for _, e := range es {
			out = append(out, e.seq)
		}
		return out
	}
	assert.Nil(t, page(-1, 10))
	for range 5 {
		r.push(policy.Event{}, 0)
	}
	assert.Equal(t, int64(3), r.oldest())
	assert.Equal(t, []int64{3, 4, 5}, page(-1, 10))
	assert.Equal(t, []int64{4, 5}, page(-1, 2))
	assert.Equal(t, []int64{4}, page(3, 1))
	_, next, trunc := r.page(0, 10)
	assert.True(t, trunc)
	assert.Equal(t, int64(5), next)
	_, next, trunc = r.page(2, 10)
	assert.False(t, trunc)
	assert.Equal(t, int64(5), next)
	es, next, trunc := r.page(5, 10)
	assert.Empty(t, es)
	assert.False(t, trunc)
	assert.Equal(t, int64(5), next)
	es, next, _ = r.page(9, 10)
	assert.Empty(t, es)
	assert.Equal(t, int64(9), next)
}

func TestTokenFormat(t *testing.T) {
	tok, err := newCampaignToken(42)
	require.NoError(t, err)
	id, ok := parseCampaignToken(tok)
	assert.True(t, ok)
	assert.Equal(t, policy.CampaignID(42), id)
	for _, bad := range []string{"", "bursar_c", "bursar_c_0123456789abcdef0123456789abcdef", "bursar_c1_0123456789ABCDEF0123456789abcdef",
		"bursar_c1_0123", "bursar_c-1_0123456789abcdef0123456789abcdef", "bursar_c1234567890_0123456789abcdef0123456789abcdef"} {
		_, ok := parseCampaignToken(bad)
		assert.False(t, ok, bad)
	}
	for h, want := range map[string]bool{"Bearer x": true, "bearer   x ": true, "Bearer": false, "Basic x": false, "Bearer " + strings.Repeat("y", 513): false} {
		_, ok := bearer(h)
		assert.Equal(t, want, ok, h)
	}
}

// workload drives a service through every kind of operation.
func workload(t *testing.T, s *Service) {
	t.Helper()
	ctx := context.Background()
	do := func(o *op) {
		err := s.withState(ctx, func(tx *txn) error { _, err := tx.apply(o); return err })
		if !errors.Is(err, policy.ErrBudgetExhausted) {
			require.NoError(t, err)
		}
	}
	for i, cls := range []policy.Class{policy.AgentBurst, policy.Opportunistic} {
		env := policy.Envelope{Name: fmt.Sprintf("c%d", i), Budget: 0.05, Guaranteed: 8, Sustained: 8, BurstCeiling: 32, Bucket: 100, Class: cls,
			IO: &policy.Flow{Rate: 1, Bucket: 5, Ceiling: 2}}
		do(&op{Op: opRegister, Env: &env, TokenHash: hexHash(hashToken(fmt.Sprint(i)))})
	}
	for tick := range 40 {
		do(&op{Op: opRequest, C: tick % 2, GPUs: 4 + tick%7, Duration: 3 + tick%5})
		do(&op{Op: opConsume, C: tick % 2, IO: 3, Inf: 50})
		if tick%9 == 0 {
			do(&op{Op: opReleaseAll, C: 0, Class: "agent-burst"})
		}
		require.NoError(t, s.Tick())
	}
}

// fingerprint renders the whole state the service can show.
func fingerprint(s *Service) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return coreFingerprint(s.core)
}

func coreFingerprint(c *core) string {
	var b strings.Builder
	fmt.Fprintf(&b, "t=%d free=%d leases=%+v pending=%+v\n", c.b.Now(), c.b.Free(), c.b.Leases(), c.b.Pending())
	for i, cs := range c.camps {
		id := policy.CampaignID(i)
		// reqs: the campaign's request ids (ids.go) must survive a
		// restart as exactly as the broker's state.
		fmt.Fprintf(&b, "%s %x credits=%v tokens=%v io=%v supply=%+v pending=%d granted=%d reqs=%v slurm=%v over=%v\n", cs.name, cs.hash, c.b.Credits(id), c.b.Tokens(id),
			c.b.FlowTokens(id, policy.IO), c.b.Supply(id), cs.pending, cs.grantedGPUs, cs.reqs, cs.slurmJobs, cs.slurmOver)
	}
	es, _, _ := c.journal.page(0, 1<<30)
	for _, e := range es {
		fmt.Fprintf(&b, "%d %s\n", e.seq, e.ev.String())
	}
	return b.String()
}

func openDir(t *testing.T, dir string) *Service {
	t.Helper()
	s, err := New(Options{Broker: testCfg(), DataDir: dir, AdminToken: testAdmin})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

func TestReplayRestoresEverything(t *testing.T) {
	dir := t.TempDir()
	s := openDir(t, dir)
	assert.True(t, s.Report().Created)
	workload(t, s)
	want := fingerprint(s)
	assert.Contains(t, want, "deny", "the workload exhausts a budget")
	assert.Contains(t, want, "throttle-io")
	require.NoError(t, s.Close())

	s2 := openDir(t, dir)
	assert.Equal(t, want, fingerprint(s2))
	rep := s2.Report()
	assert.False(t, rep.Created)
	assert.Equal(t, 40, rep.Records[opTick])
	assert.Equal(t, 2, rep.Records[opRegister])
	assert.Zero(t, rep.CutBytes)
}

// TestReplayAtEveryRecord: the file as a crash could leave it, cut after
// any record, replays to a consistent state, and cut inside a record loses
// that record only.
func TestReplayAtEveryRecord(t *testing.T) {
	dir := t.TempDir()
	s := openDir(t, dir)
	workload(t, s)
	require.NoError(t, s.Close())
	data, err := os.ReadFile(filepath.Join(dir, walName))
	require.NoError(t, err)
	lines := strings.SplitAfter(string(data), "\n")
	prefix := ""
	for i, l := range lines[:len(lines)-1] {
		if i%7 != 0 { // every 7th record keeps the test quick
			prefix += l
			continue
		}
		d1 := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(d1, walName), []byte(prefix), 0o600))
		a := openDir(t, d1)
		d2 := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(d2, walName), []byte(prefix+l[:len(l)/2]), 0o600))
		b := openDir(t, d2)
		assert.Equal(t, fingerprint(a), fingerprint(b), "record %d", i)
		if i > 0 {
			assert.Equal(t, int64(len(l)/2), b.Report().CutBytes)
			assert.Contains(t, b.Report().CutReason, "torn record")
		}
		prefix += l
	}
}

func writeWAL(t *testing.T, dir, content string) {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(dir, walName), []byte(content), 0o600))
}

func goodWAL(t *testing.T) (dir string, lines []string) {
	dir = t.TempDir()
	s := openDir(t, dir)
	workload(t, s)
	require.NoError(t, s.Close())
	data, err := os.ReadFile(filepath.Join(dir, walName))
	require.NoError(t, err)
	return dir, strings.SplitAfter(string(data), "\n")
}

// TestTailPolicy: a damaged complete record at the tail (it may have been
// acknowledged) stops the start with the command that cuts it, unless
// RecoverTail; a torn last record (no newline: never acknowledged) is cut
// with a report; overwritten data without a newline (zeroed blocks) is not
// taken for a torn write.
func TestTailPolicy(t *testing.T) {
	_, lines := goodWAL(t)
	n := len(lines) - 1 // the last element is the empty rest
	intact := strings.Join(lines[:n-1], "")
	last := lines[n-1]
	complete := map[string]string{
		"checksum": "00000000" + last[8:],
		"payload":  last[:20] + "X" + last[21:],
		"garbage":  "\x00\x00\x00\x00\x00\x00\n",
		"too long": strings.Repeat("z", maxRecord+10) + "\n",
		"zeroed":   strings.Repeat("\x00", 64<<10),
		"junk":     "hello, world",
	}
	torn := map[string]string{
		"header":  last[:5],
		"payload": last[:len(last)/2],
		"almost":  last[:len(last)-1],
	}
	cut := func(t *testing.T, dir, tail string, s *Service) {
		rep := s.Report()
		assert.Equal(t, int64(len(tail)), rep.CutBytes)
		assert.Equal(t, int64(len(intact)), rep.CutOffset)
		st, err := os.Stat(filepath.Join(dir, walName))
		require.NoError(t, err)
		assert.Equal(t, int64(len(intact)), st.Size(), "the tail is cut from the file")
	}
	for name, tail := range complete {
		t.Run("complete/"+name, func(t *testing.T) {
			dir := t.TempDir()
			writeWAL(t, dir, intact+tail)
			_, err := New(Options{Broker: testCfg(), DataDir: dir, AdminToken: testAdmin})
			require.Error(t, err)
			cmd := fmt.Sprintf("bursar journal repair --data-dir %s --cut-after %d", dir, n-1)
			assert.Contains(t, err.Error(), cmd)
			assert.Contains(t, err.Error(), "--recover-tail")
			st, err := os.Stat(filepath.Join(dir, walName))
			require.NoError(t, err)
			assert.Equal(t, int64(len(intact+tail)), st.Size(), "nothing is cut without a decision")

			s, err := New(Options{Broker: testCfg(), DataDir: dir, AdminToken: testAdmin, RecoverTail: true})
			require.NoError(t, err)
			cut(t, dir, tail, s)
			require.NoError(t, s.Close())
		})
	}
	for name, tail := range torn {
		t.Run("torn/"+name, func(t *testing.T) {
			dir := t.TempDir()
			writeWAL(t, dir, intact+tail)
			s := openDir(t, dir)
			cut(t, dir, tail, s)
			assert.Contains(t, s.Report().CutReason, "torn record")
		})
	}
}

// TestRepairJournal: the command the refusal names cuts exactly there, and
// the service then starts with the records before the damage.
func TestRepairJournal(t *testing.T) {
	_, lines := goodWAL(t)
	n := len(lines) - 1
	dir := t.TempDir()
	intact := strings.Join(lines[:n-2], "")
	writeWAL(t, dir, intact+"00000000"+lines[n-2][8:]+lines[n-1][:7]) // damaged complete record, then a torn one
	_, err := New(Options{Broker: testCfg(), DataDir: dir, AdminToken: testAdmin})
	require.ErrorContains(t, err, fmt.Sprintf("--cut-after %d", n-2))

	_, err = RepairJournal(dir, n-1)
	require.ErrorContains(t, err, fmt.Sprintf("record %d", n-1), "a damaged record cannot be kept")
	_, err = RepairJournal(dir, 0)
	require.Error(t, err)
	rep, err := RepairJournal(dir, n-2)
	require.NoError(t, err)
	assert.Equal(t, n-2, rep.Kept)
	assert.Equal(t, int64(len(intact)), rep.Offset)
	assert.Equal(t, 0, rep.CutIntact)
	s := openDir(t, dir)
	assert.Zero(t, s.Report().CutBytes)

	// Not under a live service.
	_, err = RepairJournal(dir, 1)
	require.ErrorContains(t, err, "in use by a running service")
}

func TestDamageBeforeIntactRecordsIsFatal(t *testing.T) {
	_, lines := goodWAL(t)
	lines[5] = "00000000" + lines[5][8:]
	dir := t.TempDir()
	writeWAL(t, dir, strings.Join(lines, ""))
	for _, recover := range []bool{false, true} {
		_, err := New(Options{Broker: testCfg(), DataDir: dir, AdminToken: testAdmin, RecoverTail: recover})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "refusing to cut acknowledged records")
		assert.Contains(t, err.Error(), "bursar journal repair --data-dir "+dir+" --cut-after 5")
	}
}

// TestVersion1JournalLoads: a journal written before the format's
// version 2 (its header says 1) replays to the same state as the same
// records under a version-2 header, and the service goes on appending to
// it.
func TestVersion1JournalLoads(t *testing.T) {
	dir, lines := goodWAL(t)
	s := openDir(t, dir)
	want := fingerprint(s)
	require.NoError(t, s.Close())
	_, header, ok := strings.Cut(strings.TrimSuffix(lines[0], "\n"), " ")
	require.True(t, ok)
	require.Contains(t, header, `"version":2`)
	v1 := strings.Replace(header, `"version":2`, `"version":1`, 1)
	old := t.TempDir()
	writeWAL(t, old, fmt.Sprintf("%08x %s\n", crc32Of(v1), v1)+strings.Join(lines[1:], ""))
	s = openDir(t, old)
	assert.Equal(t, want, fingerprint(s))
	require.NoError(t, s.Tick())
	require.NoError(t, s.Close())
	s = openDir(t, old)
	assert.NotEqual(t, want, fingerprint(s), "the tick appended to the version-1 journal was replayed")
}

func TestIntactButWrongRecordsAreFatal(t *testing.T) {
	_, lines := goodWAL(t)
	line := func(payload string) string {
		return fmt.Sprintf("%08x %s\n", crc32Of(payload), payload)
	}
	cases := map[string]string{
		"bad json":       lines[0] + line(`{"op":`),
		"unknown op":     lines[0] + line(`{"op":"teleport","t":0}`),
		"wrong time":     lines[0] + line(`{"op":"tick","t":5}`),
		"unknown camp":   lines[0] + line(`{"op":"request","t":0,"c":3,"gpus":1,"duration":1}`),
		"no-op":          lines[0] + lines[1] + line(`{"op":"release-all","t":0,"c":0}`),
		"no header":      line(`{"op":"tick","t":1}`),
		"other version":  line(`{"op":"open","t":0,"version":3,"config":{}}`),
		"version 0":      line(`{"op":"open","t":0,"config":{}}`),
		"bad token hash": lines[0] + line(`{"op":"register","t":0,"env":{"name":"x","budget":1,"guaranteed":0,"sustained":1,"burst_ceiling":1,"bucket":1,"class":"deadline"},"token_hash":"zz"}`),
	}
	want := map[string]string{
		"bad json": "does not decode", "unknown op": `unknown operation "teleport"`, "wrong time": "stamped t=5 at broker time 0",
		"unknown camp": "unknown campaign 3", "no-op": "changes nothing on replay", "no header": "not a bursar journal",
		"other version": "format version 3, this build reads 1 to 2", "version 0": "format version 0", "bad token hash": "bad token hash",
	}
	for name, content := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			writeWAL(t, dir, content)
			_, err := New(Options{Broker: testCfg(), DataDir: dir, AdminToken: testAdmin})
			require.Error(t, err)
			assert.Contains(t, err.Error(), want[name])
		})
	}
}

func crc32Of(s string) uint32 { return crc32Checksum([]byte(s)) }

func crc32Checksum(b []byte) uint32 { return crc32.Checksum(b, crcTable) }

func TestConfigMismatchIsFatal(t *testing.T) {
	dir, _ := goodWAL(t)
	cfg := testCfg()
	cfg.Pool = 65
	_, err := New(Options{Broker: cfg, DataDir: dir, AdminToken: testAdmin})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "same broker flags")
}

func TestDataDirIsLocked(t *testing.T) {
	dir := t.TempDir()
	openDir(t, dir)
	_, err := New(Options{Broker: testCfg(), DataDir: dir, AdminToken: testAdmin})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "in use by another process")
}

// TestWriteFailureStopsService: after the journal file fails, nothing is
// acknowledged any more and the failure is reported.
func TestWriteFailureStopsService(t *testing.T) {
	s := openDir(t, t.TempDir())
	require.NoError(t, s.Tick())
	s.wal.f.Close() // every later write fails
	err := s.Tick()
	require.Error(t, err)
	require.Error(t, s.Failed())
	err = s.withState(context.Background(), func(*txn) error { return nil })
	assert.Contains(t, err.Error(), "failed")
	select {
	case <-s.failCh:
	default:
		t.Fatal("the failure does not stop Serve")
	}
}

// FuzzReplay: whatever follows an intact prefix in the journal file,
// opening it never panics; when it succeeds the file is cut to what
// replayed, and opening it again cuts nothing and rebuilds the same state.
func FuzzReplay(f *testing.F) {
	dir := f.TempDir()
	s, err := New(Options{Broker: testCfg(), DataDir: dir, AdminToken: testAdmin})
	require.NoError(f, err)
	env := policy.Envelope{Name: "c", Budget: 1, Guaranteed: 4, Sustained: 4, BurstCeiling: 8, Bucket: 10, Class: policy.AgentBurst}
	require.NoError(f, s.withState(context.Background(), func(tx *txn) error {
		_, err := tx.apply(&op{Op: opRegister, Env: &env, TokenHash: hexHash(hashToken("x"))})
		return err
	}))
	require.NoError(f, s.Close())
	prefix, err := os.ReadFile(filepath.Join(dir, walName))
	require.NoError(f, err)
	f.Add([]byte(`5b5a5b5a {"op":"tick","t":1}` + "\n"))
	f.Add([]byte(fmt.Sprintf("%08x %s\n", crc32Checksum([]byte(`{"op":"tick","t":1}`)), `{"op":"tick","t":1}`)))
	f.Add([]byte(fmt.Sprintf("%08x %s\n", crc32Checksum([]byte(`{"op":"request","t":0,"gpus":1,"duration":1}`)), `{"op":"request","t":0,"gpus":1,"duration":1}`)))
	f.Add([]byte("\n\n\n"))
	opts := Options{Broker: testCfg(), AdminToken: testAdmin}
	require.NoError(f, opts.fill())
	f.Fuzz(func(t *testing.T, tail []byte) {
		d := t.TempDir()
		writeWAL(t, d, string(prefix)+string(tail))
		opts.DataDir = d
		c, w, _, err := openState(opts)
		if err != nil {
			return
		}
		fp := coreFingerprint(c)
		require.NoError(t, w.close())
		c2, w2, rep, err := openState(opts)
		require.NoError(t, err)
		defer w2.close()
		assert.Zero(t, rep.CutBytes)
		assert.Equal(t, fp, coreFingerprint(c2))
	})
}
