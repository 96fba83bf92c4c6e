package sweep

import (
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/bursar-hpc/bursar/configs"
	"github.com/bursar-hpc/bursar/engine"
	"github.com/bursar-hpc/bursar/policy/policies"
	"github.com/bursar-hpc/bursar/policy/quota"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cacheEntries lists the cache's entry files.
func cacheEntries(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*", "*.json"))
	require.NoError(t, err)
	return files
}

// sequentialStats are the counts of a one-worker sweep of plans over a
// cache holding the keys in kept: a run hits if its key was kept or an
// earlier run of the sweep had it (the paper's grids repeat a scenario:
// the headroom series' default point is the grace series' default point).
func sequentialStats(plans []*configs.Plan, kept map[string]bool) CacheStats {
	seen := map[string]bool{}
	maps.Copy(seen, kept)
	var st CacheStats
	for _, p := range plans {
		for ri := range p.NumRuns() {
			_, s := p.Run(ri)
			key := RunKey(&s)
			if seen[key] {
				st.Hits++
			} else {
				st.Misses++
			}
			seen[key] = true
		}
	}
	return st
}

func keysOf(files []string) map[string]bool {
	keys := map[string]bool{}
	for _, f := range files {
		keys[strings.TrimSuffix(filepath.Base(f), ".json")] = true
	}
	return keys
}

func TestCacheRerunComputesNothingAndMatches(t *testing.T) {
	dir := t.TempDir()
	cache, err := OpenCache(dir)
	require.NoError(t, err)
	plans, first := quickPaper(t, []int64{7}, Options{Workers: 1, Cache: cache})
	n := int64(countRuns(plans))
	want := sequentialStats(plans, nil)
	assert.Equal(t, want, cache.Stats())
	assert.Less(t, want.Misses, n, "the quick paper repeats a scenario")
	assert.Len(t, cacheEntries(t, dir), int(want.Misses))

	again, err := OpenCache(dir)
	require.NoError(t, err)
	_, second := quickPaper(t, []int64{7}, Options{Workers: 2, Cache: again})
	assert.Equal(t, CacheStats{Hits: n}, again.Stats())
	assert.Equal(t, RunsCSV(first), RunsCSV(second))
	assert.Equal(t, LatenciesJSON(first), LatenciesJSON(second))
}

func countRuns(plans []*configs.Plan) int {
	n := 0
	for _, p := range plans {
		n += p.NumRuns()
	}
	return n
}

// TestCacheCorruptEntryIsRecomputed: a flipped byte, a truncated file and
// an entry moved to another key's place are each caught and recomputed,
// and the rewritten entry is good again.
func TestCacheCorruptEntryIsRecomputed(t *testing.T) {
	dir := t.TempDir()
	cache, err := OpenCache(dir)
	require.NoError(t, err)
	_, want := quickPaper(t, []int64{7}, Options{Workers: 2, Cache: cache})
	files := cacheEntries(t, dir)
	require.GreaterOrEqual(t, len(files), 3)

	b, err := os.ReadFile(files[0])
	require.NoError(t, err)
	i := strings.Index(string(b), `"utilization":`) + len(`"utilization":`)
	b[i] ^= 1 // 0.83… becomes 1.83…: still JSON, wrong number
	require.NoError(t, os.WriteFile(files[0], b, 0o644))
	b, err = os.ReadFile(files[1])
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(files[1], b[:len(b)/2], 0o644))
	b, err = os.ReadFile(files[3])
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(files[2], b, 0o644))

	again, err := OpenCache(dir)
	require.NoError(t, err)
	_, got := quickPaper(t, []int64{7}, Options{Workers: 1, Cache: again})
	st := again.Stats()
	assert.Equal(t, int64(3), st.Corrupt)
	assert.Equal(t, int64(3), st.Misses)
	assert.Equal(t, RunsCSV(want), RunsCSV(got))

	third, err := OpenCache(dir)
	require.NoError(t, err)
	quickPaper(t, []int64{7}, Options{Workers: 2, Cache: third})
	assert.Equal(t, int64(0), third.Stats().Misses)
}

// TestInterruptedSweepResumesFromTheCache is Ctrl-C then rerun: the first
// sweep is cancelled after some runs, keeps what finished in the cache
// and returns no results; the rerun computes only the rest and its
// outputs equal those of a sweep never interrupted.
func TestInterruptedSweepResumesFromTheCache(t *testing.T) {
	seeds := []int64{7, 11, 13}
	plans, whole := quickPaper(t, seeds, Options{Workers: 2})
	total := countRuns(plans)

	dir := t.TempDir()
	cache, err := OpenCache(dir)
	require.NoError(t, err)
	ctx, cancel := context.WithCancelCause(context.Background())
	var once sync.Once
	stopAt := total / 3
	interrupted, err := Execute(ctx, plans, Options{Workers: 2, Cache: cache, Progress: func(done, _ int) {
		if done >= stopAt {
			once.Do(func() { cancel(errors.New("Ctrl-C")) })
		}
	}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Ctrl-C")
	assert.Nil(t, interrupted)
	kept := keysOf(cacheEntries(t, dir))
	assert.GreaterOrEqual(t, len(kept), stopAt-1) // one repeated scenario may have hit
	assert.Less(t, len(kept), total)

	resumed, err := OpenCache(dir)
	require.NoError(t, err)
	results, err := Execute(context.Background(), plans, Options{Workers: 1, Cache: resumed})
	require.NoError(t, err)
	want := sequentialStats(plans, kept)
	assert.Equal(t, want, resumed.Stats())
	assert.GreaterOrEqual(t, want.Hits, int64(len(kept)))
	assert.Equal(t, RunsCSV(whole), RunsCSV(results))
	assert.Equal(t, LatenciesJSON(whole), LatenciesJSON(results))
}

// TestRunKeyCoversEveryKnob: changing any knob (the seed and the
// enforcement policy included) changes the address.
func TestRunKeyCoversEveryKnob(t *testing.T) {
	base := engine.DefaultScenario()
	seen := map[string]string{RunKey(&base): "default"}
	for i := range engine.Knobs {
		k := &engine.Knobs[i]
		s := base
		v := k.Get(&s) + 1
		if k.Kind == "bool" {
			v = 1 - k.Get(&s)
		}
		require.NoError(t, k.Set(&s, v), k.Name)
		key := RunKey(&s)
		prev, dup := seen[key]
		assert.False(t, dup, "%s has the key of %s", k.Name, prev)
		seen[key] = k.Name
	}
	assert.Len(t, RunKey(&base), 64)
	assert.NotEmpty(t, ProgramVersion())
}

// FuzzDecodeCacheEntry: any bytes either decode to metrics or are
// reported corrupt; nothing panics.
func FuzzDecodeCacheEntry(f *testing.F) {
	s := engine.DefaultScenario()
	key := RunKey(&s)
	f.Add(testEntry(key, &s, &engine.Metrics{Utilization: 0.5, ProbeLats: []int{1, 2}}))
	f.Add([]byte("sha256:00\n{}"))
	rs := runs[engine.Metrics]{decode: decodeCacheBody}
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, err := rs.fromEntry(key, data); err != nil {
			assert.ErrorIs(t, err, errCorrupt)
		}
	})
}

// BenchmarkCacheHit is one warm lookup: read, checksum and decode an
// entry.
func BenchmarkCacheHit(b *testing.B) {
	cache, err := OpenCache(b.TempDir())
	require.NoError(b, err)
	s := engine.DefaultScenario()
	res, err := engine.Run(s, engine.Options{})
	require.NoError(b, err)
	key := RunKey(&s)
	require.NoError(b, cache.write(key, testEntry(key, &s, &res.Metrics)))
	rs := runs[engine.Metrics]{decode: decodeCacheBody}
	b.ReportAllocs()
	for b.Loop() {
		data, err := cache.read(key)
		if err != nil || data == nil {
			b.Fatal("no entry", err)
		}
		if _, err := rs.fromEntry(key, data); err != nil {
			b.Fatal("no hit", err)
		}
	}
}

// testEntry is the cache entry a sweep run of s with metrics m stores.
func testEntry(key string, s *engine.Scenario, m *engine.Metrics) []byte {
	return frameEntry(append(marshalWire(&cacheEntry{Key: key, Program: ProgramVersion(), Scenario: *s, Metrics: toWire(m)}), '\n'))
}

// The key tells apart what the scenario's JSON leaves out: a campaign's
// field of an explicit cast, and the policy with its knobs.
func TestRunKeySeesTheCastAndThePolicy(t *testing.T) {
	a := engine.DefaultScenario().Explicit()
	b := engine.DefaultScenario().Explicit()
	b.Cast = append([]engine.Campaign(nil), b.Cast...)
	b.Cast[1].Bucket++
	require.NotEqual(t, RunKey(&a), RunKey(&b))
	c := a
	c.Policy = "quota"
	require.NotEqual(t, RunKey(&a), RunKey(&c))
	k := policies.DefaultKnobs()
	quota.Slot.Edit(&k).BorrowingLimit = 8
	d := c
	d.PolicyKnobs = &k
	require.NotEqual(t, RunKey(&c), RunKey(&d))
	plain := engine.DefaultScenario()
	require.Equal(t, RunKey(&plain), RunKey(&plain))
}
