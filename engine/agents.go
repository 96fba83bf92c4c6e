package engine

import (
	"math"

	"github.com/bursar-hpc/bursar/policy"
)

// Agent is one campaign's behaviour: it talks to the broker between ticks.
// Step runs once per tick, before the broker ticks, with the tick number.
type Agent interface {
	Name() string
	Step(t int)
}

// The agents' numbers in the paper's scenario (model.md §7): the defaults
// of PaperCast, which a scenario file may change per campaign; they are the
// agents' own numbers, not the burst-ceiling knobs.
const (
	naiveTarget        = 256 // GPUs naive-sci keeps asked for
	adaptiveMaxWant    = 384
	adaptiveMinWant    = 64
	adaptiveStarvedMin = 32
	hotHorizon         = 600 // seconds of hot work one GPU should cover
	scienceLease       = 600
	opportunisticLease = 300
	opportunisticMax   = 96
	opportunisticSpare = 64
	stormTarget        = 384
	stormPeriod        = 20
	stormLease         = 120
	stormInference     = 200
	victimPeriod       = 120
	victimGPUs         = 16
	victimLease        = 60
	probeGPUs          = 128
	probePeriod        = 300
	probeLease         = 180
	probeGiveUp        = 590
	backfillMinRequest = 16
	backfillLease      = 300
	lowTokenFraction   = 0.2
	inferenceBase      = 20
	inferencePerGPU    = 0.5
)

// ProbeCensor is the latency the probe records when it gives up: it stops
// once more than probeGiveUp seconds have passed.
const ProbeCensor = probeGiveUp + 1

// VictimBurstCeiling is the victim's burst ceiling (model.md §6; not a knob).
const VictimBurstCeiling = 64

type base struct {
	name string
	b    alloc
	id   policy.CampaignID
}

func (a *base) Name() string { return a.name }

func (a *base) request(gpus, duration int, cls policy.Class) {
	// The only refusal an agent can meet is an exhausted budget, which the
	// broker journals; the agent just goes on.
	if bk := a.b.bk; bk != nil {
		_, _ = bk.Request(a.id, gpus, duration, cls)
		return
	}
	_, _ = a.b.a.Request(a.id, gpus, duration, cls)
}

// topUp asks for the difference when outstanding GPUs of class cls (or all
// classes) are below want.
func (a *base) topUp(filter policy.Class, want, duration int, cls policy.Class) {
	// The branch on the broker is written out at the hot call sites (here,
	// doWork, the agents' steps, the sample): alloc's wrappers are too big
	// to inline, and a call frame per read cost the Bursar path ~10 %
	// (engine/alloc.go). The broker's path ends in calls only, so that
	// nothing is spilled for the interface path (topUpAny) on entry.
	if bk := a.b.bk; bk != nil {
		if out := bk.Outstanding(a.id, filter); out < want {
			_, _ = bk.Request(a.id, want-out, duration, cls)
		}
		return
	}
	a.topUpAny(filter, want, duration, cls)
}

// topUpAny is topUp under a baseline policy, through the Allocator.
func (a *base) topUpAny(filter policy.Class, want, duration int, cls policy.Class) {
	if out := a.b.a.Outstanding(a.id, filter); out < want {
		_, _ = a.b.a.Request(a.id, want-out, duration, cls)
	}
}

// science is the shared part of the two science campaigns.
type science struct {
	base
	work *workList
}

// doWork spends this tick's held GPUs, throttled by the io the broker
// allows, on the tasks in processing order (the starved window or the to-do
// list).
func (s *science) doWork(starved bool) {
	bk := s.b.bk
	if bk == nil {
		s.doWorkAny(starved)
		return
	}
	held := bk.Held(s.id, policy.AnyClass)
	if held == 0 || s.work.empty() {
		return
	}
	desired := float64(held) * s.work.meanIOOf(starved)
	allowed := bk.ConsumeIO(s.id, desired)
	factor := 1.0
	if desired > 0 {
		factor = allowed / desired
	}
	s.work.work(starved, float64(held)*factor)
}

// doWorkAny is doWork under a baseline, through the Allocator: apart, so
// that the broker's path keeps no interface call.
func (s *science) doWorkAny(starved bool) {
	held := s.b.a.Held(s.id, policy.AnyClass)
	if held == 0 || s.work.empty() {
		return
	}
	desired := float64(held) * s.work.meanIOOf(starved)
	allowed, _, _ := s.b.a.Consume(s.id, desired, 0)
	factor := 1.0
	if desired > 0 {
		factor = allowed / desired
	}
	s.work.work(starved, float64(held)*factor)
}

type naive struct {
	science
	target, lease int
}

func (n *naive) Step(int) {
	n.doWork(false)
	if n.work.empty() {
		_ = n.b.ReleaseAll(n.id, policy.AnyClass)
		return
	}
	n.topUp(policy.AgentBurst, n.target, n.lease, policy.AgentBurst)
}

type adaptive struct {
	science
	env policy.Envelope
	// The agent's numbers (model.md §7; Campaign documents them).
	maxWant, minWant, starvedMin, hotHorizon, lease int
	oppMax, oppKeep, oppLease                       int
	// hotEnough is a hot-work sum beyond which the want is pinned at
	// maxWant: the scan may stop there without changing any result, since
	// adding non-negative sizes never lowers it.
	hotEnough float64
	// exactHot: always sum the hot work task by task (the reference path,
	// for tests of the fast one).
	exactHot bool
}

// hotWant is max(64, min(trunc(hot/600), 384)) where hot is the work left in
// the leading to-do tasks of density ≥ price, summed in to-do order as the
// prototype does. The want only changes at multiples of 600 GPU-s, so the
// hot index's near-exact sum decides it unless the sum is within slack of
// such a boundary; only then are the tasks summed one by one.
func (a *adaptive) hotWant(price float64) int {
	want := func(hot float64) int { return max(a.minWant, min(int(hot/float64(a.hotHorizon)), a.maxWant)) }
	if !a.exactHot {
		approx := a.work.hot.work(price)
		if lo, hi := want(approx-a.work.hot.slack), want(approx+a.work.hot.slack); lo == hi {
			return lo
		}
	}
	hot := 0.0
	for _, ti := range a.work.todo[a.work.head:] {
		if a.work.done[ti] {
			continue
		}
		if a.work.tasks[ti].Density < price || hot >= a.hotEnough {
			break
		}
		hot += a.work.remaining[ti]
	}
	return want(hot)
}

// readAny is the adaptive agent's step 1 under a baseline, through the
// Allocator: out of line, so that Step's broker path keeps a small frame
// (policy.Supply is big) and its values in registers.
func (a *adaptive) readAny() (free int, multiplier, tokens, ioTokens, desiredInf, allowedInf float64) {
	x := a.b.a
	free, multiplier = x.Supply(a.id).Free, x.Multiplier()
	tokens, ioTokens = x.Tokens(a.id), x.FlowTokens(a.id, policy.IO)
	held := x.Held(a.id, policy.AnyClass)
	desiredInf = inferenceBase + inferencePerGPU*float64(held)
	_, allowedInf, _ = x.Consume(a.id, 0, desiredInf)
	return free, multiplier, tokens, ioTokens, desiredInf, allowedInf
}

func (a *adaptive) Step(int) {
	// Step 1, read supply: only the parts this agent uses, straight from
	// the broker (the envelope's parts were read once at registration).
	// Under a baseline, free is what this campaign could be granted now
	// without preemption (docs/studies.md §6.5).
	var free int
	var multiplier, tokens, ioTokens, desiredInf, allowedInf float64
	if bk := a.b.bk; bk != nil {
		free, multiplier = bk.Free(), bk.Multiplier()
		tokens, ioTokens = bk.Tokens(a.id), bk.FlowTokens(a.id, policy.IO)
		held := bk.Held(a.id, policy.AnyClass)
		desiredInf = inferenceBase + inferencePerGPU*float64(held)
		allowedInf = bk.ConsumeInference(a.id, desiredInf)
	} else {
		free, multiplier, tokens, ioTokens, desiredInf, allowedInf = a.readAny()
	}

	starved := ioTokens < lowTokenFraction*a.env.IO.Bucket
	var meanIO float64
	if starved && !a.work.empty() {
		meanIO = a.work.meanIOOf(true) // before the work: finished tasks count
	}
	a.doWork(starved)
	if a.work.empty() {
		_ = a.b.ReleaseAll(a.id, policy.AnyClass)
		return
	}
	if allowedInf < desiredInf/2 {
		return // short of thinking: keep the old plan
	}

	price := 3.0 * multiplier
	// hot > 0 exactly when the densest task left is hot: every to-do task
	// has work left.
	if a.work.tasks[a.work.first()].Density >= price {
		want := a.hotWant(price)
		if tokens < lowTokenFraction*a.env.Bucket {
			want = min(want, int(a.env.Sustained))
		}
		if starved {
			want = min(want, max(a.starvedMin, int(a.env.IO.Rate/meanIO)))
		}
		a.topUp(policy.AgentBurst, want, a.lease, policy.AgentBurst)
	} else {
		_ = a.b.ReleaseAll(a.id, policy.AgentBurst)
	}

	if free > a.oppMax {
		want := min(a.oppMax, free-a.oppKeep)
		a.topUp(policy.Opportunistic, want, a.oppLease, policy.Opportunistic)
	}
}

// sleeper is an agent whose Step does nothing at all on some ticks,
// whatever the allocator's state: wakeAt(t) is the first tick ≥ t at
// which its Step may do anything (read the allocator or change its own
// state), from its own state alone. runTicks does not call Step before
// then. (quietAgent's nextAct is the weaker promise of the event skip,
// which lets a quiet step read the allocator.)
type sleeper interface {
	wakeAt(t int) int
}

var (
	_ sleeper = (*victim)(nil)
	_ sleeper = (*storm)(nil)
	_ sleeper = (*probe)(nil)
)

type storm struct {
	base
	lo, hi                int
	target, period, lease int
	inference             float64
}

func (s *storm) Step(t int) {
	if t >= s.lo && t < s.hi {
		if bk := s.b.bk; bk != nil {
			_ = bk.ConsumeInference(s.id, s.inference)
		} else {
			_, _, _ = s.b.a.Consume(s.id, 0, s.inference)
		}
		if t%s.period == 0 {
			s.topUp(policy.AnyClass, s.target, s.lease, policy.AgentBurst)
		}
	}
	if t == s.hi {
		_ = s.b.ReleaseAll(s.id, policy.AnyClass)
	}
}

// wakeAt: a storm acts on the ticks of its window [lo, hi) and at hi.
func (s *storm) wakeAt(t int) int {
	if t >= s.lo && t < s.hi || t == s.hi {
		return t
	}
	n := math.MaxInt
	if t < s.lo && s.lo < s.hi {
		n = s.lo
	}
	if t < s.hi {
		n = min(n, s.hi)
	}
	return n
}

type victim struct {
	base
	gpus, period, lease int
	// study, when measuring, notes when each request was filed so that an
	// unserved one is counted at its censored latency.
	study *study
}

func (v *victim) Step(t int) {
	if t%v.period != 0 {
		return
	}
	var out int
	if bk := v.b.bk; bk != nil {
		out = bk.Outstanding(v.id, policy.AnyClass)
	} else {
		out = v.b.a.Outstanding(v.id, policy.AnyClass)
	}
	if out == 0 {
		if _, err := v.b.Request(v.id, v.gpus, v.lease, policy.Interactive); err == nil && v.study != nil {
			v.study.requested(v.id, v.b.a.Now())
		}
	}
}

// wakeAt: the victim acts on its period ticks only.
func (v *victim) wakeAt(t int) int { return nextMultiple(t, v.period) }

// ProbeObservation is one measurement of the probe: how long it took to
// hold 128 GPUs (or to give up), and the tick it ended.
type ProbeObservation struct {
	Latency int `json:"latency"`
	T       int `json:"t"`
}

type probe struct {
	base
	gpus, period, lease, giveUp int
	measuring                   bool
	t0                          int
	obs                         []ProbeObservation
}

func (p *probe) Step(t int) {
	if p.measuring {
		var held int
		if bk := p.b.bk; bk != nil {
			held = bk.Held(p.id, policy.AnyClass)
		} else {
			held = p.b.a.Held(p.id, policy.AnyClass)
		}
		if held >= p.gpus || t-p.t0 > p.giveUp {
			p.obs = append(p.obs, ProbeObservation{Latency: t - p.t0, T: t})
			_ = p.b.ReleaseAll(p.id, policy.AnyClass)
			p.measuring = false
			return
		}
		p.topUp(policy.AnyClass, p.gpus, p.lease, policy.AgentBurst)
		return
	}
	if t%p.period == 0 {
		p.t0 = t
		p.measuring = true
		p.request(p.gpus, p.lease, policy.AgentBurst)
	}
}

// wakeAt: a measuring probe acts every tick, an idle one on its period
// ticks.
func (p *probe) wakeAt(t int) int {
	if p.measuring {
		return t
	}
	return nextMultiple(t, p.period)
}

type backfill struct {
	base
	headroom, minRequest, lease int
}

func (f *backfill) Step(int) {
	var free, held, out int
	if bk := f.b.bk; bk != nil {
		free, held, out = bk.Free(), bk.Held(f.id, policy.AnyClass), bk.Outstanding(f.id, policy.AnyClass)
	} else {
		free, held, out = f.b.a.Supply(f.id).Free, f.b.a.Held(f.id, policy.AnyClass), f.b.a.Outstanding(f.id, policy.AnyClass)
	}
	extra := free - f.headroom
	pending := out - held
	if extra > f.minRequest && pending == 0 {
		f.request(extra, f.lease, policy.Opportunistic)
	}
}
