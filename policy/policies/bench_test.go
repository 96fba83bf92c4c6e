package policies_test

import (
	"testing"

	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/policies"
)

// The load of policy's BenchmarkTickSteadyState (the default scenario's
// cast and rhythm, in a two-hour cycle that can run for ever), driven
// through the Allocator contract so that every policy carries the same
// load: `go test -run '^$' -bench TickSteadyState -benchmem
// ./policy/policies/`.
type load struct {
	a                                             policy.Allocator
	victim, adaptive, naive, storm, storm2, probe policy.CampaignID
	backfill                                      policy.CampaignID
	t, probeT0                                    int
	probing                                       bool
}

const benchBudget = 1e6

func newLoad(tb testing.TB, name string) *load {
	cfg := policy.DefaultConfig(512)
	cfg.IOCapacity, cfg.InferenceCapacity = 28, 5000
	a, err := policies.New(name, cfg, policies.DefaultKnobs())
	if err != nil {
		tb.Fatal(err)
	}
	reg := func(e policy.Envelope) policy.CampaignID {
		c, err := a.Register(e)
		if err != nil {
			tb.Fatal(err)
		}
		return c
	}
	sci := func(name string) policy.Envelope {
		return policy.Envelope{Name: name, Budget: 20000 * benchBudget, Guaranteed: 64, Sustained: 128, BurstCeiling: 384, Bucket: 300000, Class: policy.AgentBurst,
			IO:        &policy.Flow{Rate: 6, Bucket: 3600, Ceiling: 16},
			Inference: &policy.Flow{Rate: 500, Bucket: 100000, Ceiling: 2000}}
	}
	storm := func(name string) policy.Envelope {
		return policy.Envelope{Name: name, Budget: 8000 * benchBudget, Guaranteed: 16, Sustained: 64, BurstCeiling: 384, Bucket: 150000, Class: policy.AgentBurst,
			Inference: &policy.Flow{Rate: 50, Bucket: 5000, Ceiling: 500}}
	}
	l := &load{a: a}
	l.victim = reg(policy.Envelope{Name: "victim", Budget: 5000 * benchBudget, Guaranteed: 32, Sustained: 32, BurstCeiling: 64, Bucket: 60000, Class: policy.Interactive})
	l.adaptive = reg(sci("adaptive-sci"))
	l.naive = reg(sci("naive-sci"))
	l.storm = reg(storm("storm"))
	l.storm2 = reg(storm("storm2"))
	l.probe = reg(policy.Envelope{Name: "probe", Budget: 1e9, Sustained: 128, BurstCeiling: 128, Bucket: 1e9, Class: policy.AgentBurst})
	l.backfill = reg(policy.Envelope{Name: "backfill", Budget: 1e9, Sustained: 512, BurstCeiling: 512, Bucket: 1e9, Class: policy.Opportunistic})
	return l
}

func (l *load) topUp(c policy.CampaignID, filter policy.Class, want, chunk, duration int, cls policy.Class) {
	if out := l.a.Outstanding(c, filter); out < want {
		_, _ = l.a.Request(c, min(want-out, chunk), duration, cls)
	}
}

func (l *load) second() {
	a := l.a
	l.t++
	t := l.t
	phase := t % 7200
	if t%120 == 0 && a.Outstanding(l.victim, policy.AnyClass) == 0 {
		_, _ = a.Request(l.victim, 16, 60, policy.Interactive)
	}
	for _, c := range []policy.CampaignID{l.adaptive, l.naive} {
		if phase >= 5000 {
			if phase == 5000 {
				_ = a.ReleaseAll(c, policy.AnyClass)
			}
			continue
		}
		held := a.Held(c, policy.AnyClass)
		s := a.Supply(c)
		_, _, _ = a.Consume(c, float64(held)*0.05, 20+0.5*float64(held))
		l.topUp(c, policy.AgentBurst, 256, 16, 600, policy.AgentBurst)
		if c == l.adaptive && s.Free > 96 {
			l.topUp(c, policy.Opportunistic, min(96, s.Free-64), 32, 300, policy.Opportunistic)
		}
	}
	for _, c := range []policy.CampaignID{l.storm, l.storm2} {
		switch {
		case phase == 5400:
			_ = a.ReleaseAll(c, policy.AnyClass)
		case phase >= 3600 && phase < 5400:
			_, _, _ = a.Consume(c, 0, 200)
			if t%20 == 0 {
				l.topUp(c, policy.AnyClass, 384, 384, 120, policy.AgentBurst)
			}
		}
	}
	switch {
	case !l.probing && t%300 == 0:
		l.probing, l.probeT0 = true, t
		_, _ = a.Request(l.probe, 128, 180, policy.AgentBurst)
	case l.probing && (a.Held(l.probe, policy.AnyClass) >= 128 || t-l.probeT0 > 590):
		_ = a.ReleaseAll(l.probe, policy.AnyClass)
		l.probing = false
	}
	if extra := a.Free() - 160; extra > 16 && a.Outstanding(l.backfill, policy.AnyClass) == a.Held(l.backfill, policy.AnyClass) {
		_, _ = a.Request(l.backfill, min(extra, 32), 300, policy.Opportunistic)
	}
	a.Tick()
}

// BenchmarkTickSteadyState is one simulated second of that load under each
// policy, with no Recorder, after a warm-up cycle.
func BenchmarkTickSteadyState(b *testing.B) {
	for _, name := range policies.Names {
		b.Run(name, func(b *testing.B) {
			l := newLoad(b, name)
			for range 7200 {
				l.second()
			}
			b.ReportAllocs()
			for b.Loop() {
				l.second()
			}
		})
	}
}

// TestSteadyStateAllocatesNothing: after a warm-up cycle, a second of the
// benchmark's load allocates nothing under any policy.
func TestSteadyStateAllocatesNothing(t *testing.T) {
	for _, name := range policies.Names {
		l := newLoad(t, name)
		for range 7200 {
			l.second()
		}
		if allocs := testing.AllocsPerRun(7200, l.second); allocs != 0 {
			t.Errorf("%s: a steady-state second allocates %v times", name, allocs)
		}
	}
}
