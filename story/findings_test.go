package story

import (
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bursar-hpc/bursar/internal/csvfile"
)

// The committed run of the default study (results/story, made from a
// clean build) and the README's findings read from it (README.md, "The
// lab's story"). A change that moves the study regenerates the folder and
// restates the findings from the new numbers.
var committedDir = filepath.Join("..", "results", "story")

type ivJSON struct {
	Mean, Lo, Hi *float64
	N            int
}

func (iv ivJSON) mean(t *testing.T) float64 {
	t.Helper()
	require.NotNil(t, iv.Mean)
	return *iv.Mean
}

// lo and hi are the interval's ends (the mean where there is none).
func (iv ivJSON) lo(t *testing.T) float64 {
	if iv.Lo == nil {
		return iv.mean(t)
	}
	return *iv.Lo
}

func (iv ivJSON) hi(t *testing.T) float64 {
	if iv.Hi == nil {
		return iv.mean(t)
	}
	return *iv.Hi
}

type pointJSON struct {
	Line, Policy, Users string
	Seeds               int
	Metrics             map[string]ivJSON
	UsageRatio          []ivJSON `json:"usage_ratio"`
}

func committedPoints(t *testing.T) map[[2]string]pointJSON {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(committedDir, "summary.json"))
	require.NoError(t, err)
	var s struct{ Points []pointJSON }
	require.NoError(t, json.Unmarshal(b, &s))
	out := map[[2]string]pointJSON{}
	for _, p := range s.Points {
		out[[2]string{p.Line, p.Users}] = p
	}
	return out
}

func at(t *testing.T, ps map[[2]string]pointJSON, policy, users, key string) ivJSON {
	t.Helper()
	p, ok := ps[[2]string{policy, users}]
	require.True(t, ok, "no point %s %s", policy, users)
	iv, ok := p.Metrics[key]
	require.True(t, ok, "no metric %s", key)
	return iv
}

// Finding 1: under priority, strategic users inflate: the top tier's share
// of the GPU-hours submitted in the last four weeks is far above the
// honest users' (intervals apart), and most of the work.
func TestFindingPriorityInflates(t *testing.T) {
	ps := committedPoints(t)
	h, s := at(t, ps, "priority", HonestName, "top_share_end"), at(t, ps, "priority", StrategicName, "top_share_end")
	require.Greater(t, s.lo(t), h.hi(t), "strategic top share %v not above honest %v", s.mean(t), h.mean(t))
	require.Greater(t, s.mean(t), 0.6)
	require.Less(t, h.mean(t), 0.15)
	day := at(t, ps, "priority", StrategicName, "first_raise_day").mean(t)
	require.True(t, day > 0 && day < 45, "first raise on day %v", day)
}

// Finding 2: static ownership idles: with honest users, over a third of
// the pool's GPU-hours... (the bound the README states) sat free while
// jobs waited, over 3.5 times any other policy's upper bound.
func TestFindingStaticIdles(t *testing.T) {
	ps := committedPoints(t)
	st := at(t, ps, "static", HonestName, "idle_while_waiting")
	require.Greater(t, st.lo(t), 0.3)
	for _, p := range []string{"fifo", "priority", "budget", "bursar"} {
		other := at(t, ps, p, HonestName, "idle_while_waiting")
		// 3.5: static's lower bound is 3.9 times Bursar's upper one (8.7 %),
		// the closest; it was 4 times before Bursar's scavenger on nodes
		// counted only the GPUs of nodes that are up (bc98d22), which moved
		// Bursar's runs on the lab's failing nodes.
		require.Greater(t, st.lo(t), 3.5*other.hi(t), "%s idles %v", p, other.mean(t))
	}
}

// Finding 3: what a park is charged decides squatting: strategic users
// park far fewer GPU-hours under Bursar (charged at the interactive
// price) than under budget (charged the hours) and priority (free).
func TestFindingSquattingFollowsTheCharge(t *testing.T) {
	ps := committedPoints(t)
	bur := at(t, ps, "bursar", StrategicName, "squatted_gpu_h")
	for _, p := range []string{"priority", "budget"} {
		other := at(t, ps, p, StrategicName, "squatted_gpu_h")
		require.Greater(t, other.lo(t), bur.hi(t), "%s squats %v, bursar %v", p, other.mean(t), bur.mean(t))
	}
	for _, p := range DefaultPolicies {
		require.Zero(t, at(t, ps, p, HonestName, "squatted_gpu_h").mean(t), "honest users parked under %s", p)
	}
}

// Finding 4: where the policy charges nothing (fifo, priority, static)
// the values users put on latency and wait do not matter: the
// sensitivity populations' runs are identical, seed by seed.
func TestFindingFreePoliciesIgnoreValues(t *testing.T) {
	f, err := os.Open(filepath.Join(committedDir, "runs.csv"))
	require.NoError(t, err)
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	require.NoError(t, err)
	byKey := map[string][]string{}
	users := slices.Index(rows[0], "users")
	for _, r := range rows[1:] {
		if r[users] == HonestName || r[users] == StrategicName || !slices.Contains([]string{"fifo", "priority", "static"}, r[0]) {
			continue
		}
		k := r[0] + " " + r[users+1]
		rest := slices.Concat(r[:users], r[users+1:])
		if prev, ok := byKey[k]; ok {
			require.Equal(t, prev, rest, "%s: %s differs from another population", k, r[users])
		}
		byKey[k] = rest
	}
	require.NotEmpty(t, byKey)
}

// TestCommittedRunReproduces: one committed run (priority, strategic,
// seed 1) is what the code computes now, cell for cell.
func TestCommittedRunReproduces(t *testing.T) {
	if testing.Short() {
		t.Skip("replays 90 days")
	}
	f, err := os.Open(filepath.Join(committedDir, "runs.csv"))
	require.NoError(t, err)
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	require.NoError(t, err)
	st := NewStudy()
	st.Plan()
	var sp Spec
	for _, x := range st.Specs {
		if x.Line == "priority" && x.Users == 1 && x.Seed == 1 {
			sp = x
		}
	}
	r, _, err := st.RunSpec(sp)
	require.NoError(t, err)
	s := &Summary{Study: st, Runs: []Result{r}}
	require.Equal(t, rows[0], s.RunsColumns())
	got := []string{r.Line, r.Policy, r.Users, strconv.FormatInt(r.Seed, 10), strconv.Itoa(r.Jobs)}
	for k := range Metrics {
		got = append(got, csvfile.Cell(Metrics[k].Get(&r)))
	}
	for _, x := range r.UsageRatio {
		got = append(got, csvfile.Cell(x))
	}
	for _, row := range rows[1:] {
		if row[0] == "priority" && row[2] == StrategicName && row[3] == "1" {
			require.Equal(t, row, got)
			return
		}
	}
	t.Fatal("no committed row for priority strategic seed 1")
}

// Finding 1b: in the seeds where inflation began within the first month
// and every project had raised by the end, priority served the urgent
// jobs and the debug jobs as fifo does (honest users, same seed): their
// mean waits over the 90 days 0.5 to 2 times fifo's; with honest users
// priority's are under 10 % of fifo's in every seed.
func TestFindingInflatedPriorityIsFifo(t *testing.T) {
	f, err := os.Open(filepath.Join(committedDir, "runs.csv"))
	require.NoError(t, err)
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	require.NoError(t, err)
	col := func(name string) int { return slices.Index(rows[0], name) }
	val := func(r []string, name string) float64 {
		x, err := strconv.ParseFloat(r[col(name)], 64)
		require.NoError(t, err, name)
		return x
	}
	runs := map[[3]string][]string{}
	for _, r := range rows[1:] {
		runs[[3]string{r[col("line")], r[col("users")], r[col("seed")]}] = r
	}
	all := 0
	for _, seed := range []string{"1", "2", "3", "4", "5"} {
		fifo := runs[[3]string{"fifo", HonestName, seed}]
		for _, key := range []string{"urgent_wait_h", "debug_latency_h"} {
			h := runs[[3]string{"priority", HonestName, seed}]
			require.Less(t, val(h, key), 0.1*val(fifo, key), "seed %s %s", seed, key)
		}
		s := runs[[3]string{"priority", StrategicName, seed}]
		if d := s[col("first_raise_day")]; val(s, "raised_end") < 6 || d == "" || val(s, "first_raise_day") > 30 {
			continue
		}
		all++
		for _, key := range []string{"urgent_wait_h", "debug_latency_h"} {
			r := val(s, key) / val(fifo, key)
			require.True(t, r > 0.5 && r < 2, "seed %s: %s %v × fifo's", seed, key, r)
		}
	}
	require.GreaterOrEqual(t, all, 3, "seeds where every project raised")
}

// Finding 5: interventions. Without the contract about a third of a
// drain's... (the README states the committed numbers) jobs are ended by
// a human; with the contract (its 2 h minimum runtime below the
// operator's 8 h threshold) none is, for honest and strategic users
// alike, under budget and under priority: the lab's contrast and the
// contract's are both 100 %. With a minimum runtime above the threshold
// (12 h) the contract removes fewer, between a third and nine tenths.
func TestFindingContractEndsInterventions(t *testing.T) {
	ps := committedPoints(t)
	for _, u := range []string{HonestName, StrategicName} {
		for _, line := range []string{"priority", "budget, contract off"} {
			iv := at(t, ps, line, u, "interventions_per_drain")
			require.Greater(t, iv.lo(t), 0.1, "%s %s", line, u)
		}
		for _, line := range []string{"budget", "priority, contract on", "bursar"} {
			require.Zero(t, at(t, ps, line, u, "interventions").mean(t), "%s %s", line, u)
			require.Less(t, at(t, ps, line, u, "drain_h").mean(t), 0.5, "%s %s: drain time", line, u)
		}
		for _, line := range []string{"priority", "budget, contract off"} {
			require.Greater(t, at(t, ps, line, u, "drain_h").mean(t), 2.0, "%s %s: drain time", line, u)
		}
	}
	b, err := os.ReadFile(filepath.Join(committedDir, "summary.json"))
	require.NoError(t, err)
	var s struct {
		Contrasts []struct {
			Name, Users  string
			Mean, Lo, Hi *float64
		}
	}
	require.NoError(t, json.Unmarshal(b, &s))
	found := false
	for _, c := range s.Contrasts {
		require.NotNil(t, c.Mean, c.Name)
		if c.Name == "a 12 h minimum runtime (above the threshold)" {
			found = true
			require.True(t, *c.Mean > 0.33 && *c.Mean < 0.9, "%s: %v", c.Name, *c.Mean)
			continue
		}
		require.Equal(t, 1.0, *c.Mean, "%s (%s)", c.Name, c.Users)
	}
	require.True(t, found)
}
