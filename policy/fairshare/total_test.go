package fairshare_test

import (
	"math"
	"testing"

	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/baseline"
	bt "github.com/bursar-hpc/bursar/policy/baseline/baselinetest"
	"github.com/bursar-hpc/bursar/policy/fairshare"
)

// The total a period's factors divide by is the decayed total at the
// period's start, even when it is first read after the decay that ends
// the period (the total is summed at its first read, not at the
// period's start): Priority read at the end of a period's last tick
// divides the usage by the total before that tick's decay.
//
// Pool 3, periods of 10 ticks, half-life 10 ticks (each period's decay
// is exactly ½), W_fairshare 1 and W_age 0 (the priority is F). A holds
// 2 GPUs from tick 1, B 1 GPU from tick 1 to 25 (a 25-tick job): the
// usage at the end of ticks 10, 20, 30 is A 20, 30, 35 and B 10, 15,
// 12.5, the totals 30, 45, 47.5. B's job ends in the period 21…30, and
// the admission after it (no request waiting: it reads no total) starts
// that period's calculation; at the end of tick 30 B's priority is
// 2^(−12.5 / 45 / S_B), not 2^(−12.5 / 47.5 / S_B).
func TestPeriodTotalIsThePeriodStarts(t *testing.T) {
	knobs := fairshare.Knobs{HalfLife: 10, WFairshare: 1, WAge: 0, MaxAge: 10, CalcPeriod: 10}
	rule := fairshare.NewRule(knobs)
	k, err := baseline.New(bt.Config(3, 0), rule)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := k.Register(bt.Env("a", 1, policy.AgentBurst))
	b, _ := k.Register(bt.Env("b", 1, policy.AgentBurst))
	if _, err := k.RequestRigid(a, 2, 1000, 1000, policy.AgentBurst, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := k.RequestRigid(b, 1, 25, 25, policy.AgentBurst, 1); err != nil {
		t.Fatal(err)
	}
	bt.Ticks(k, 20)
	if ua, ub := rule.Usage(a), rule.Usage(b); ua != 30 || ub != 15 {
		t.Fatalf("usage at the end of tick 20: A %v, B %v; want 30, 15", ua, ub)
	}
	bt.Ticks(k, 10)
	if ua, ub := rule.Usage(a), rule.Usage(b); ua != 35 || ub != 12.5 {
		t.Fatalf("usage at the end of tick 30: A %v, B %v; want 35, 12.5", ua, ub)
	}
	s := k.Campaign(b).Share
	got := rule.Priority(k, b, k.Now())
	if want := math.Exp2(-12.5 / 45 / s); got != want {
		t.Fatalf("B's priority at the end of tick 30 is %v, want 2^(−12.5/45/%v) = %v (2^(−12.5/47.5/%[3]v) = %v)", got, want, s, math.Exp2(-12.5/47.5/s))
	}
}
