package budget

import (
	"bytes"
	"slices"
	"testing"

	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/baseline"
	bt "github.com/bursar-hpc/bursar/policy/baseline/baselinetest"
)

// A victim search that accepted a lease is made again even when it was
// not sensitive: the same failed search in a later victim order may be
// sensitive, and a sensitive search is tried again at the order's next
// change (NextEvent), a tick the replay would otherwise skip.
//
// Pool 16, grace 10, restart zero, no minimum runtime, priorities every
// 100 ticks (periods start at 1, 101, 201, 301). P (share 3/4, 12 GPUs)
// and V (1/4, 4 GPUs). V holds L2, 1 GPU from tick 1 (estimate 260 s,
// so it ends at 261 and would end by itself within the grace from 251),
// and L1, 6 GPUs from tick 101: q_V = 7/4 > 1. P asks for 12 GPUs at
// tick 105 with 9 free: it needs 3 more, q_P = 0 < 1. The final-share
// test (12 × 1/4 ≤ (7 − taken − l) × 3/4) rejects L1 (3 > 0.75 with
// nothing taken, or 0 with L2 taken) and accepts L2 (3 ≤ 4.5): 1 GPU of
// the 3, the search fails and preempts nothing.
//
// GPU-seconds lost if noticed: L1 6 × (t + 10 − 101), L2 t + 10 − 1, so
// L1 goes first to tick 111 (a tie there, and L1 is the newer) and L2
// from 112. At 105 (L1, L2) the search is not sensitive: the next
// admission is the next period's, 201. At 201 the order is (L2, L1): L1
// is tested with a GPU already taken from V, the search is sensitive, and
// the next admission is at the order's next change, 251 (L2's loss drops
// to 0), before L2's end at 261 and the period at 301. A search skipped
// at 201 (it noticed nothing, but it had accepted L2) would leave the
// search at 105's insensitivity and skip tick 251. Nothing is noticed
// either way: the journals agree, and the ticks admitted at differ.
func TestAcceptingSearchIsMadeAgain(t *testing.T) {
	run := func(every bool) ([]int, []byte) {
		knobs := DefaultKnobs()
		knobs.CalcPeriod = 100
		knobs.Restart = baseline.Restart{}
		knobs.MinRuntime[policy.AgentBurst] = 0
		rule := NewRule(knobs)
		rule.everySearch = every
		k, err := baseline.New(bt.Config(16, 10), rule)
		if err != nil {
			t.Fatal(err)
		}
		var j bt.Journal
		k.SetRecorder(&j)
		k.CountWork(true)
		cp, _ := k.Register(bt.Env("p", 3, policy.AgentBurst))
		cv, _ := k.Register(bt.Env("v", 1, policy.AgentBurst))
		var admitted []int
		tick := func() {
			passes := k.Work().Passes
			k.Tick()
			if k.Work().Passes != passes && k.Now() > 101 {
				admitted = append(admitted, k.Now())
			}
		}
		if _, err := k.RequestRigid(cv, 1, 260, 260, policy.AgentBurst, 1); err != nil {
			t.Fatal(err)
		}
		for k.Now() < 100 {
			tick()
		}
		if _, err := k.RequestRigid(cv, 6, 1000, 1000, policy.AgentBurst, 101); err != nil {
			t.Fatal(err)
		}
		for k.Now() < 104 {
			tick()
		}
		if _, err := k.RequestRigid(cp, 12, 100, 100, policy.AgentBurst, 105); err != nil {
			t.Fatal(err)
		}
		for k.Now() < 300 {
			tick()
		}
		if n := j.Of(policy.EventPreemptNotice); len(n) != 0 {
			t.Fatalf("everySearch %v: notices %v, want none", every, n)
		}
		return admitted, j.Bytes
	}
	// 102 and 262: the tick after a change (L1's grant, L2's end); 105:
	// P's request; 201: the period; 251: L2's loss drops to 0 (after the
	// sensitive search at 201); 261: L2 ends (10 free: P still waits).
	want := []int{102, 105, 201, 251, 261, 262}
	got, jKept := run(false)
	oracle, jEvery := run(true)
	if !slices.Equal(oracle, want) {
		t.Fatalf("searching every time, admitted at %v, want %v", oracle, want)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("admitted at %v, want %v (as searching every time)", got, want)
	}
	if !bytes.Equal(jKept, jEvery) {
		t.Fatalf("journals differ:\nkept:\n%s\nevery search:\n%s", jKept, jEvery)
	}
}

// A victim search in which no candidate could be taken is not made: its
// candidates are not keyed (nor sorted), and it notices nothing, as the
// search would. One that could take one is made.
//
// Pool 16, grace 10, restart zero, no minimum runtime. P (share 3/4)
// and V (1/4). V holds L1, 6 GPUs from tick 1 (q_V = 6/4 > 1), and in
// the second case L2 too, 1 GPU (q_V = 7/4). P asks for 12 GPUs at tick
// 5 with 10 or 9 free (q_P = 0 < 1). The final-share test, 12 × 1/4 ≤
// (held_V − taken_V − l) × 3/4, rejects L1 (3 > 0, or 3 > 0.75 with L2
// held) and accepts L2 (3 ≤ 4.5): with L1 alone nothing can be taken,
// the search is not made and no lease is keyed; with L2 it is made (both
// keyed) and fails, 1 GPU of the 3 P lacks (L2, granted with L1, loses
// less and goes first, so L1 is tested with a GPU taken: sensitive). In the third case the filler
// holds the whole pool: its leases are always victims, the search is
// made and notices them.
func TestSearchThatCanTakeNothingIsNotMade(t *testing.T) {
	for _, c := range []struct {
		name           string
		v, filler      []int // V's leases' and the filler's GPUs
		keyed, noticed int
		sensitive      bool
	}{
		{"nothing-takable", []int{6}, nil, 0, 0, false},
		{"one-takable", []int{6, 1}, nil, 2, 0, true},
		{"filler", nil, []int{16}, 1, 1, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			knobs := DefaultKnobs()
			knobs.Restart = baseline.Restart{}
			knobs.MinRuntime[policy.AgentBurst] = 0
			rule := NewRule(knobs)
			k, err := baseline.New(bt.Config(16, 10), rule)
			if err != nil {
				t.Fatal(err)
			}
			var j bt.Journal
			k.SetRecorder(&j)
			cp, _ := k.Register(bt.Env("p", 3, policy.AgentBurst))
			cv, _ := k.Register(bt.Env("v", 1, policy.AgentBurst))
			cf, _ := k.Register(bt.Env("f", 0, policy.Opportunistic))
			keyed := 0
			rule.Hooks(k, &rule.easy)
			key := rule.victimKey
			rule.victimKey = func(l *baseline.Lease) int { keyed++; return key(l) }
			for _, g := range c.v {
				if _, err := k.RequestRigid(cv, g, 1000, 1000, policy.AgentBurst, 1); err != nil {
					t.Fatal(err)
				}
			}
			for _, g := range c.filler {
				if _, err := k.Request(cf, g, 1000, policy.Opportunistic); err != nil {
					t.Fatal(err)
				}
			}
			for k.Now() < 4 {
				k.Tick()
			}
			if _, err := k.RequestRigid(cp, 12, 100, 100, policy.AgentBurst, 5); err != nil {
				t.Fatal(err)
			}
			k.Tick()
			if keyed != c.keyed {
				t.Errorf("%d leases keyed, want %d", keyed, c.keyed)
			}
			if n := len(j.Of(policy.EventPreemptNotice)); n != c.noticed {
				t.Errorf("%d notices, want %d", n, c.noticed)
			}
			if !rule.searched || rule.searchAt != 5 || rule.sensitive != c.sensitive {
				t.Errorf("searched %v at %d, sensitive %v: want a search at 5, sensitive %v", rule.searched, rule.searchAt, rule.sensitive, c.sensitive)
			}
		})
	}
}
