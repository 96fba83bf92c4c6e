package sweep

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// committedBand is a metric's mean and 95 % t interval over the seeds in
// the committed results/compare/summary.json.
type committedBand struct{ Mean, Lo, Hi float64 }

// committedCompare reads results/compare/summary.json: per policy, the
// number of seeds and every metric's band.
func committedCompare(t *testing.T) (map[string]map[string]committedBand, map[string]int) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "results", "compare", "summary.json"))
	require.NoError(t, err)
	var s struct {
		Seeds  []int `json:"seeds"`
		Points []struct {
			Series  string                   `json:"series"`
			N       int                      `json:"n"`
			Metrics map[string]committedBand `json:"metrics"`
		} `json:"points"`
	}
	require.NoError(t, json.Unmarshal(b, &s))
	require.Len(t, s.Seeds, 30)
	out, ns := map[string]map[string]committedBand{}, map[string]int{}
	for _, p := range s.Points {
		out[p.Series], ns[p.Series] = p.Metrics, p.N
	}
	return out, ns
}

// Every number README.md "What Bursar buys" states, checked against the
// committed 30-seed run (which TestCommittedCompareSummary checks against
// the code): each mean and interval as the README rounds it, and every
// difference it names lying outside both intervals.
func TestREADMECompareFindings(t *testing.T) {
	m, ns := committedCompare(t)
	for _, p := range []string{"bursar", "fifo", "priority", "static", "static-share", "fairshare", "quota", "quota-fair", "budget"} {
		require.Equal(t, 30, ns[p], "%s: the README's findings are over 30 seeds", p)
	}
	// near: the README's value v, written with the given rounding step.
	near := func(what string, got, v, step float64) {
		t.Helper()
		if math.Abs(got-v) > step/2+1e-9 {
			t.Errorf("%s: %v, the README says %v", what, got, v)
		}
	}
	band := func(p, key string, mean, lo, hi, step float64) {
		t.Helper()
		b := m[p][key]
		near(p+" "+key, b.Mean, mean, step)
		near(p+" "+key+" lo", b.Lo, lo, step)
		near(p+" "+key+" hi", b.Hi, hi, step)
	}
	exact := func(p, key string, v float64) { // the same in every run
		t.Helper()
		b := m[p][key]
		if b.Mean != v || b.Lo != v || b.Hi != v {
			t.Errorf("%s %s: %+v, the README says %v in every run", p, key, b, v)
		}
	}
	// apart: a's interval lies wholly below b's.
	apart := func(a, b, key string) {
		t.Helper()
		if m[a][key].Hi >= m[b][key].Lo {
			t.Errorf("%s: %s's interval %+v meets %s's %+v", key, a, m[a][key], b, m[b][key])
		}
	}
	sharing := []string{"fifo", "priority", "fairshare", "quota", "quota-fair", "budget"}

	t.Run("static-share is static on this scenario", func(t *testing.T) {
		// The agent scenario's groups record no widest job, so condo
		// partitions have no minima and are the share split.
		require.Equal(t, m["static"], m["static-share"])
	})

	t.Run("isolation", func(t *testing.T) {
		for p, v := range map[string]float64{"bursar": 1, "static": 1, "priority": 61, "quota-fair": 61, "quota": 122, "budget": 63, "fairshare": 303, "fifo": 362} {
			exact(p, "victim_p95_in_censored", v)
		}
		exact("bursar", "victim_violations_in_censored", 0)
		exact("static", "victim_violations_in_censored", 0)
		band("quota-fair", "victim_violations_in_censored", 2.97, 2.90, 3.03, 0.01)
		band("quota", "victim_violations_in_censored", 4.57, 4.38, 4.75, 0.01)
		band("fifo", "victim_violations_in_censored", 5.73, 5.57, 5.90, 0.01)
		for _, p := range sharing {
			v := m[p]["victim_violations_in_censored"].Mean
			require.True(t, v >= m["quota-fair"]["victim_violations_in_censored"].Mean && v <= m["fifo"]["victim_violations_in_censored"].Mean, p)
		}
	})
	t.Run("static at a price in throughput", func(t *testing.T) {
		exact("static", "utilization", m["static"]["utilization"].Mean)
		near("static utilization", m["static"]["utilization"].Mean, 0.787, 0.001)
		band("bursar", "utilization", 0.823, 0.820, 0.826, 0.001)
		apart("static", "bursar", "utilization")
		exact("static", "storm_excess_gpu_s", 52200)
	})
	t.Run("throughput", func(t *testing.T) {
		band("quota", "utilization", 0.952, 0.949, 0.954, 0.001)
		band("budget", "utilization", 0.970, 0.967, 0.973, 0.001)
		band("quota-fair", "adaptive_science", 4285, 4246, 4324, 1)
		band("priority", "adaptive_science", 4343, 4304, 4383, 1)
		band("bursar", "adaptive_science", 3266, 3230, 3303, 1)
		band("fifo", "naive_science", 2159, 2126, 2192, 1)
		band("quota-fair", "naive_science", 2470, 2437, 2503, 1)
		band("bursar", "naive_science", 1347, 1323, 1371, 1)
		for _, p := range sharing {
			u := m[p]["utilization"].Mean
			require.True(t, u >= m["quota"]["utilization"].Mean && u <= m["budget"]["utilization"].Mean, p)
			a, n := m[p]["adaptive_science"].Mean, m[p]["naive_science"].Mean
			require.True(t, a >= m["quota-fair"]["adaptive_science"].Mean && a <= m["priority"]["adaptive_science"].Mean, p)
			require.True(t, n >= m["fifo"]["naive_science"].Mean && n <= m["quota-fair"]["naive_science"].Mean, p)
			for _, k := range []string{"utilization", "adaptive_science", "naive_science"} {
				apart("bursar", p, k)
			}
		}
	})
	t.Run("science per credit", func(t *testing.T) {
		band("bursar", "adaptive_science_per_credit", 2.14, 2.11, 2.16, 0.01)
		band("bursar", "naive_science_per_credit", 0.79, 0.77, 0.80, 0.01)
		for _, p := range sharing {
			near(p+" adaptive per credit in 3.27–3.33", math.Min(math.Max(m[p]["adaptive_science_per_credit"].Mean, 3.27), 3.33), m[p]["adaptive_science_per_credit"].Mean, 0.01)
			near(p+" naive per credit in 1.79–1.80", math.Min(math.Max(m[p]["naive_science_per_credit"].Mean, 1.79), 1.80), m[p]["naive_science_per_credit"].Mean, 0.01)
			apart("bursar", p, "adaptive_science_per_credit")
			apart("bursar", p, "naive_science_per_credit")
			r := m[p]["adaptive_science_per_credit"].Mean / m[p]["naive_science_per_credit"].Mean
			near(p+" adaptive ÷ naive in 1.82–1.86", math.Min(math.Max(r, 1.82), 1.86), r, 0.01)
		}
		ratio := func(p string) float64 {
			return m[p]["adaptive_science_per_credit"].Mean / m[p]["naive_science_per_credit"].Mean
		}
		near("bursar adaptive ÷ naive", ratio("bursar"), 2.71, 0.01)
		near("static adaptive ÷ naive", ratio("static"), 1.97, 0.01)
	})
	t.Run("static's science per credit", func(t *testing.T) {
		band("static", "adaptive_science_per_credit", 3.53, 3.50, 3.56, 0.01)
		band("fifo", "adaptive_science_per_credit", 3.33, 3.30, 3.36, 0.01)
		band("static", "naive_science_per_credit", 1.79, 1.76, 1.82, 0.01)
		near("fifo naive per credit", m["fifo"]["naive_science_per_credit"].Mean, 1.79, 0.01)
		for _, p := range sharing {
			apart(p, "static", "adaptive_science_per_credit")
			s := m[p]["adaptive_spent"].Mean
			require.True(t, s >= 1291-0.5 && s <= 1327+0.5, "%s adaptive spent %v", p, s)
		}
		exact("static", "adaptive_spent", m["static"]["adaptive_spent"].Mean)
		near("static adaptive spent", m["static"]["adaptive_spent"].Mean, 1130, 1)
		dSci := m["fifo"]["adaptive_science"].Mean - m["static"]["adaptive_science"].Mean
		dSpent := m["fifo"]["adaptive_spent"].Mean - m["static"]["adaptive_spent"].Mean
		near("FCFS's extra credits", dSpent, 174, 1)
		near("FCFS's extra science", dSci, 349, 1)
		near("their science per credit", dSci/dSpent, 2.0, 0.1)
		// The marginal credits buy less than the average: what the
		// explanation rests on.
		require.Less(t, dSci/dSpent, m["static"]["adaptive_science_per_credit"].Lo)
	})
	t.Run("storm excess", func(t *testing.T) {
		band("bursar", "storm_excess_gpu_s", 152097, 152086, 152108, 1)
		band("fairshare", "storm_excess_gpu_s", 22878, 22009, 23747, 1)
		band("fifo", "storm_excess_gpu_s", 76388, 71387, 81388, 1)
		for _, p := range sharing {
			e := m[p]["storm_excess_gpu_s"].Mean
			require.True(t, e >= m["fairshare"]["storm_excess_gpu_s"].Mean && e <= m["fifo"]["storm_excess_gpu_s"].Mean, p)
			apart(p, "bursar", "storm_excess_gpu_s")
		}
	})
	t.Run("fairness", func(t *testing.T) {
		near("budget jain", m["budget"]["jain_storm"].Mean, 0.986, 0.001)
		near("quota-fair jain", m["quota-fair"]["jain_storm"].Mean, 0.981, 0.001)
		band("quota", "jain_storm", 0.916, 0.911, 0.920, 0.001)
		apart("quota", "bursar", "jain_storm")
		band("fairshare", "jain_storm", 0.965, 0.964, 0.966, 0.001)
		band("bursar", "jain_storm", 0.937, 0.935, 0.939, 0.001)
		near("static jain", m["static"]["jain_storm"].Mean, 0.999, 0.001)
		band("priority", "jain_storm", 0.938, 0.933, 0.943, 0.001)
		band("fifo", "jain_storm", 0.885, 0.879, 0.890, 0.001)
		for _, p := range []string{"budget", "quota-fair", "fairshare"} {
			apart("bursar", p, "jain_storm")
		}
		apart("fifo", "bursar", "jain_storm")
		require.False(t, m["priority"]["jain_storm"].Hi < m["bursar"]["jain_storm"].Lo || m["bursar"]["jain_storm"].Hi < m["priority"]["jain_storm"].Lo,
			"priority's and bursar's intervals overlap")
	})
	t.Run("preemption", func(t *testing.T) {
		band("bursar", "preemptions", 7.3, 6.9, 7.7, 0.1)
		near("bursar agent preemptions", m["bursar"]["agent_preemptions"].Mean, 3.1, 0.1)
		band("bursar", "preempted_gpu_s", 53663, 48854, 58472, 1)
		near("fifo preemptions", m["fifo"]["preemptions"].Mean, 1.03, 0.01)
		near("fairshare preemptions", m["fairshare"]["preemptions"].Mean, 3.47, 0.01)
		near("budget preemptions", m["budget"]["preemptions"].Mean, 4.17, 0.01)
		for _, p := range []string{"fifo", "fairshare", "budget"} {
			apart(p, "bursar", "preemptions")
		}
		band("priority", "preemptions", 25.9, 25.7, 26.1, 0.1)
		band("quota-fair", "preemptions", 89.8, 88.8, 90.8, 0.1)
		band("quota-fair", "preempted_gpu_s", 476142, 473525, 478760, 1)
		// Kueue's defaults preempt no queue: the one preemption a run is
		// the filler's (outside the cohort), the same in every run.
		exact("quota", "preemptions", 1)
		exact("quota", "preempted_gpu_s", 16592)
		exact("static", "preemptions", 0)
	})
}
