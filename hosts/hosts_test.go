package hosts

import (
	"math"
	"slices"
	"strings"
	"testing"
)

// rack is a Machine of a few nodes whose seats the test sets by hand.
type rack struct {
	state []State
	seats [][]Seat
}

func newRack(nodes int) *rack {
	return &rack{state: make([]State, nodes), seats: make([][]Seat, nodes)}
}

func (r *rack) SetState(i int, s State) { r.state[i] = s }

func (r *rack) Seats(i int, dst []Seat) []Seat { return append(dst, r.seats[i]...) }

// end removes the ended leases from their nodes, as the driver's
// ReleaseLease does on a placer.
func (r *rack) end(ends []End) {
	for _, e := range ends {
		r.vacate(e.Lease)
	}
}

func (r *rack) vacate(lease int) {
	for i := range r.seats {
		r.seats[i] = slices.DeleteFunc(r.seats[i], func(s Seat) bool { return s.Lease == lease })
	}
}

func scripted(t *testing.T, cfg Config, nodes int, plan ...Planned) *Hosts {
	t.Helper()
	h, err := Scripted(cfg, nodes, plan)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func contractCfg(on bool) Config {
	cfg := Default()
	cfg.Contract, cfg.MinRuntime, cfg.Threshold = on, 7200, 28800
	return cfg
}

// By hand, under the contract (m = 2 h, threshold 8 h): node 0 degrades
// at tick 10000 with job 1 (started at 1000: 9000 s run, past m) and job
// 2 (started at 5000: 5000 s run). Job 1 is requeued at once, job 2 at
// 5000 + 7200 = 12200, when it reaches m; the node is then empty: a drain
// of 2200 s, no human intervention. Node 1's job is untouched.
func TestContractRequeuesPastMinimumRuntime(t *testing.T) {
	h := scripted(t, contractCfg(true), 2, Planned{Node: 0, At: 10000, Repair: 600})
	r := newRack(2)
	r.seats[0] = []Seat{{Lease: 1, Start: 1000}, {Lease: 2, Start: 5000}}
	r.seats[1] = []Seat{{Lease: 3, Start: 0}}
	if got := h.NextAct(0, r); got != 10000 {
		t.Fatalf("NextAct(0) = %d, want the degradation's 10000", got)
	}
	ends := h.Step(10000, r)
	if want := []End{{Lease: 1, Node: 0, Why: Requeued}}; !slices.Equal(ends, want) {
		t.Fatalf("at 10000 ended %v, want %v", ends, want)
	}
	r.end(ends)
	if r.state[0] != Draining || h.State(0) != Draining {
		t.Fatalf("node 0 is %v (placer) / %v, want draining", r.state[0], h.State(0))
	}
	if got := h.NextAct(10000, r); got != 12200 {
		t.Fatalf("NextAct(10000) = %d, want job 2's minimum runtime at 12200", got)
	}
	if ends := h.Step(12199, r); len(ends) != 0 {
		t.Fatalf("at 12199 ended %v, want none (job 2 has run 7199 s)", ends)
	}
	ends = h.Step(12200, r)
	if want := []End{{Lease: 2, Node: 0, Why: Requeued}}; !slices.Equal(ends, want) {
		t.Fatalf("at 12200 ended %v, want %v", ends, want)
	}
	r.end(ends)
	want := Tally{Degradations: 1, Drains: 1, DrainSeconds: 2200, ContractRequeues: 2}
	if got := h.Tally(); got != want {
		t.Fatalf("tally %+v, want %+v", got, want)
	}
	if r.state[0] != Down || h.NextAct(12200, r) != 12800 {
		t.Fatalf("node 0 %v, next act %d: want down until its repair ends at 12800", r.state[0], h.NextAct(12200, r))
	}
	h.Step(12800, r)
	if r.state[0] != Up {
		t.Fatalf("node 0 %v after its repair, want up", r.state[0])
	}
	if len(r.seats[1]) != 1 {
		t.Fatal("node 1's job was ended")
	}
}

// By hand, without the contract (threshold 8 h): node 0 degrades at 10000
// with job 1 (started at 1000, runs past the threshold) and job 2 (ends by
// itself at 20000). Job 2 is not counted; job 1 is ended by a human at
// 10000 + 28800 = 38800: one intervention, a drain of 28800 s.
func TestThresholdCountsAHumanIntervention(t *testing.T) {
	h := scripted(t, contractCfg(false), 1, Planned{Node: 0, At: 10000, Repair: 600})
	r := newRack(1)
	r.seats[0] = []Seat{{Lease: 1, Start: 1000}, {Lease: 2, Start: 5000}}
	if ends := h.Step(10000, r); len(ends) != 0 {
		t.Fatalf("at 10000 ended %v, want none without the contract", ends)
	}
	if got := h.NextAct(10000, r); got != 38800 {
		t.Fatalf("NextAct(10000) = %d, want the threshold's 38800", got)
	}
	r.vacate(2) // job 2 ends by itself
	if ends := h.Step(20000, r); len(ends) != 0 {
		t.Fatalf("at 20000 ended %v, want none", ends)
	}
	ends := h.Step(38800, r)
	if want := []End{{Lease: 1, Node: 0, Why: Operator}}; !slices.Equal(ends, want) {
		t.Fatalf("at 38800 ended %v, want %v", ends, want)
	}
	want := Tally{Degradations: 1, Drains: 1, DrainSeconds: 28800, Interventions: 1}
	if got := h.Tally(); got != want {
		t.Fatalf("tally %+v, want %+v", got, want)
	}
}

// The contract requeues only past the minimum runtime: a job that reaches
// it after the threshold is still ended by a human. An opportunistic job
// goes at once, contract or not, and is not counted.
func TestContractBeforeThresholdOnly(t *testing.T) {
	cfg := contractCfg(true)
	cfg.Threshold = 3600
	h := scripted(t, cfg, 1, Planned{Node: 0, At: 10000, Repair: 600})
	r := newRack(1)
	r.seats[0] = []Seat{{Lease: 1, Start: 9000}, {Lease: 2, Start: 9999, Preemptible: true}}
	ends := h.Step(10000, r)
	if want := []End{{Lease: 2, Node: 0, Why: Requeued}}; !slices.Equal(ends, want) {
		t.Fatalf("at 10000 ended %v, want %v", ends, want)
	}
	r.end(ends)
	if got := h.NextAct(10000, r); got != 13600 {
		t.Fatalf("NextAct = %d, want the threshold's 13600 (before job 1's minimum runtime at 16200)", got)
	}
	ends = h.Step(13600, r)
	if want := []End{{Lease: 1, Node: 0, Why: Operator}}; !slices.Equal(ends, want) {
		t.Fatalf("at 13600 ended %v, want %v", ends, want)
	}
	want := Tally{Degradations: 1, Drains: 1, DrainSeconds: 3600, PreemptibleRequeues: 1, Interventions: 1}
	if got := h.Tally(); got != want {
		t.Fatalf("tally %+v, want %+v", got, want)
	}
}

// A hard failure ends every job on its node at once, whatever the
// contract, and counts no intervention; a human-needed repair is counted
// apart; the repair returns the node to service.
func TestFailureEndsEveryJobAndRepairReturnsTheNode(t *testing.T) {
	h := scripted(t, contractCfg(true), 2, Planned{Node: 1, At: 5000, Fail: true, Repair: 3600, Human: true})
	r := newRack(2)
	r.seats[0] = []Seat{{Lease: 1, Start: 0}}
	r.seats[1] = []Seat{{Lease: 2, Start: 4999}, {Lease: 3, Start: 0, Preemptible: true}, {Lease: 4, Start: 100}}
	ends := h.Step(5000, r)
	want := []End{{2, 1, Failed}, {3, 1, Failed}, {4, 1, Failed}}
	if !slices.Equal(ends, want) {
		t.Fatalf("ended %v, want %v", ends, want)
	}
	r.end(ends)
	if r.state[1] != Down || h.NextAct(5000, r) != 8600 {
		t.Fatalf("node 1 %v, next act %d: want down until 8600", r.state[1], h.NextAct(5000, r))
	}
	h.Step(8600, r)
	if r.state[1] != Up || h.State(1) != Up {
		t.Fatalf("node 1 %v after its repair, want up", r.state[1])
	}
	if got, want := h.Tally(), (Tally{Failures: 1, FailedLeases: 3, HumanRepairs: 1}); got != want {
		t.Fatalf("tally %+v, want %+v", got, want)
	}
	if h.NextAct(8600, r) != math.MaxInt {
		t.Fatal("a node with no planned event left acts again")
	}
}

// Llama 3's rate: 2,048 nodes over 54 days see about 419 × 0.78 ≈ 327
// hard failures (Poisson, sd ≈ 18; the repairs' downtime removes ≈ 0.3 %);
// as many degradations, whose drains (nothing seated) complete at once.
func TestDefaultRatesMatchLlama3(t *testing.T) {
	cfg := Default()
	h, err := New(cfg, 2048, 1)
	if err != nil {
		t.Fatal(err)
	}
	r := newRack(2048)
	end := 54 * 86400
	for t := h.NextAct(0, r); t <= end; t = h.NextAct(t, r) {
		h.Step(t, r)
	}
	got := h.Tally()
	for _, c := range []struct {
		name string
		n    int
	}{{"failures", got.Failures}, {"degradations", got.Degradations}} {
		if c.n < 327-4*18 || c.n > 327+4*18 {
			t.Errorf("%s: %d in 54 days on 2,048 nodes, want 327 ± 72", c.name, c.n)
		}
	}
	if got.Drains != got.Degradations || got.DrainSeconds != 0 {
		t.Errorf("empty nodes' drains: %d of %d, %d s", got.Drains, got.Degradations, got.DrainSeconds)
	}
	if got.HumanRepairs > 20 {
		t.Errorf("%d human repairs of %d, want about 0.7 %%", got.HumanRepairs, got.Failures+got.Drains)
	}
}

func TestValidateNamesTheField(t *testing.T) {
	for field, mut := range map[string]func(*Config){
		"fail_per_node_day":    func(c *Config) { c.FailPerNodeDay = -1 },
		"degrade_per_node_day": func(c *Config) { c.DegradePerNodeDay = math.NaN() },
		"fail_repair_s":        func(c *Config) { c.FailRepair = 0 },
		"drain_repair_s":       func(c *Config) { c.DrainRepair = -5 },
		"threshold_s":          func(c *Config) { c.Threshold = 0 },
		"min_runtime_s":        func(c *Config) { c.MinRuntime = -1 },
		"repair_sigma":         func(c *Config) { c.RepairSigma = -1 },
		"human_repair_share":   func(c *Config) { c.HumanRepairShare = 2 },
	} {
		c := Default()
		mut(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("%s: error %v, want one naming the field", field, err)
		}
	}
	if err := Default().Validate(); err != nil {
		t.Fatal(err)
	}
}

// A lease seated on two nodes is ended once. Node 0 degrades and node 1
// fails at the same tick: events come first (node 1's failure ends leases
// 7 and 8), then the drain rule, which finds node 0 empty once lease 7 is
// gone: its drain completes at once, with nothing requeued.
func TestALeaseOnTwoNodesEndsOnce(t *testing.T) {
	h := scripted(t, contractCfg(true), 2,
		Planned{Node: 0, At: 100, Repair: 50}, Planned{Node: 1, At: 100, Fail: true, Repair: 50})
	r := newRack(2)
	r.seats[0] = []Seat{{Lease: 7, Start: 0, Preemptible: true}}
	r.seats[1] = []Seat{{Lease: 7, Start: 0, Preemptible: true}, {Lease: 8, Start: 10}}
	ends := h.Step(100, r)
	want := []End{{7, 1, Failed}, {8, 1, Failed}}
	if !slices.Equal(ends, want) {
		t.Fatalf("ended %v, want %v", ends, want)
	}
	if got := h.Tally(); got.FailedLeases != 2 || got.PreemptibleRequeues != 0 || got.Drains != 1 || got.DrainSeconds != 0 {
		t.Fatalf("tally %+v", got)
	}
}
