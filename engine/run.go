package engine

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/bursar-hpc/bursar/policy"
)

// DisplayGroup is one campaign, or several summed (the paper's storms),
// as the series, the report and the replay show it. Groups are in order of
// their first campaign in the cast.
type DisplayGroup struct {
	Name string
	// Agent is the agent kind of the group's first campaign.
	Agent string
	// Members are the group's campaigns: indexes into Result.Envelopes
	// and Result.Cast.
	Members []int
}

// Series is the sampled state of a run, one entry per sample (every
// SampleEvery ticks, after the broker's tick), and per display group
// (Result.Groups) GPUs, credits and flows summed and fill as total tokens
// over total bucket.
type Series struct {
	T          []int
	Multiplier []float64
	Held       [][]int
	// Fill is the GPU bucket's fill fraction (tokens / B).
	Fill  [][]float64
	Spent [][]float64
	// IO (GB/s) and Inference (tokens/s) used in the last tick.
	IO        [][]float64
	Inference [][]float64
}

// Len is the number of samples.
func (s *Series) Len() int { return len(s.T) }

// Grant is one entry of the grant log.
type Grant struct {
	T        int               `json:"t"`
	Campaign policy.CampaignID `json:"-"`
	Name     string            `json:"campaign"`
	Class    policy.Class      `json:"cls"`
	GPUs     int               `json:"gpus"`
	Latency  int               `json:"latency"`
	Path     policy.Path       `json:"-"`
}

// CampaignReport is one campaign's (or display group's) end-of-run figures
// for the report.
type CampaignReport struct {
	Name      string
	Science   float64
	Completed int
	Spent     float64
	// MeanIO and MeanInference are the mean flow use over samples.
	MeanIO, MeanInference float64
	// IOThrottled and InferenceThrottled are throttled seconds.
	IOThrottled, InferenceThrottled int
}

// StormReport is one storm display group's back pressure: its throttle
// records and what it held at the samples in its (first campaign's)
// window, against the first campaign's ceiling and rate.
type StormReport struct {
	CampaignReport
	Throttles int
	PeakHeld  int
	// MeanHeld is NaN without a sample in the window.
	MeanHeld     float64
	BurstCeiling int
	Sustained    float64
	group        int
	window       Window
	sum, n       int
}

// Options says what a run keeps beyond its metrics.
type Options struct {
	// Journal keeps the JSON Lines journal (Result.Journal).
	Journal bool
	// Series keeps the sampled series (Result.Series); without it the
	// series is empty but every metric is measured the same.
	Series bool
	// TickByTick steps every tick, never skipping the quiet ones (the
	// oracle the event-skipping tests compare against; the outputs are
	// the same either way).
	TickByTick bool
	// skipOverbookProof leaves the overbooking proof out (tests check
	// that it never changes a run).
	skipOverbookProof bool
}

// Result is everything one run produced.
type Result struct {
	Scenario Scenario
	// Cast is the campaigns the run registered, in order.
	Cast    []Campaign
	Groups  []DisplayGroup
	Metrics Metrics
	Series  Series
	Grants  []Grant
	Probe   []ProbeObservation
	// OverbookRefusal is the broker's refusal of an extra campaign whose
	// guarantee overbooks the pool, the proof that guarantees are never
	// overbooked (nil if it was accepted: CheckInvariants reports it).
	OverbookRefusal error
	// Journal is the JSON Lines journal (only with Options.Journal);
	// JournalRecords counts records whether kept or not.
	Journal        []byte
	JournalRecords int
	// StormThrottles counts the throttle records of every storm.
	StormThrottles int
	// TicksSkipped counts the ticks the run did not step because nothing
	// could happen in them but the policy's bookkeeping (event skipping;
	// 0 tick by tick). It changes no output.
	TicksSkipped int
	// FirstVictimGrant, FirstThrottle and FirstPreemptNotice are sample
	// journal records (Kind 0 when there was none).
	FirstVictimGrant, FirstThrottle, FirstPreemptNotice policy.Event
	// Science are the science campaigns, naive ones first (the report's
	// order); Storms the storm display groups.
	Science []CampaignReport
	Storms  []StormReport
	// Naive and Adaptive are the first naive and adaptive campaigns and
	// Storm the first storm group (zero when the cast has none).
	Naive, Adaptive, Storm CampaignReport
	// Envelopes are the registered campaigns' envelopes, in registration
	// order.
	Envelopes []policy.Envelope
}

// GroupOf returns the index of the first display group whose first
// campaign has the agent kind, or -1.
func (r *Result) GroupOf(agent string) int {
	for i := range r.Groups {
		if r.Groups[i].Agent == agent {
			return i
		}
	}
	return -1
}

// DisplayFlowRates are the display groups' sustained io (GB/s) and
// inference (tokens/s) rates, summed over their campaigns, NaN where a
// group has no envelope in that dimension.
func (r *Result) DisplayFlowRates() (io, inference []float64) {
	io, inference = make([]float64, len(r.Groups)), make([]float64, len(r.Groups))
	for d := range r.Groups {
		io[d], inference[d] = math.NaN(), math.NaN()
		for _, i := range r.Groups[d].Members {
			env := &r.Envelopes[i]
			if env.IO != nil {
				io[d] = addRate(io[d], env.IO.Rate)
			}
			if env.Inference != nil {
				inference[d] = addRate(inference[d], env.Inference.Rate)
			}
		}
	}
	return io, inference
}

func addRate(sum, rate float64) float64 {
	if math.IsNaN(sum) {
		return rate
	}
	return sum + rate
}

// recorder takes the broker's journal: it keeps the grant log and the sample
// records the report needs, and the JSON Lines text when asked.
type recorder struct {
	res  *Result
	keep bool
	w    *world
}

func (r *recorder) Record(e policy.Event) {
	res := r.res
	res.JournalRecords++
	if r.w.study != nil {
		r.w.study.record(e, r.w)
	}
	if r.keep {
		res.Journal = e.AppendJSON(res.Journal)
		res.Journal = append(res.Journal, '\n')
	}
	switch e.Kind {
	case policy.EventGrant:
		res.Grants = append(res.Grants, Grant{T: e.T, Campaign: e.CampaignID, Name: e.Campaign, Class: e.Class, GPUs: e.GPUs, Latency: e.Latency, Path: e.Path})
		if res.FirstVictimGrant.Kind == 0 && r.w.camps[e.CampaignID].kind == kindVictim {
			res.FirstVictimGrant = e
		}
	case policy.EventThrottle:
		if res.FirstThrottle.Kind == 0 {
			res.FirstThrottle = e
		}
		if sg := r.w.camps[e.CampaignID].stormGroup; sg >= 0 {
			res.StormThrottles++
			res.Storms[sg].Throttles++
		}
	case policy.EventPreemptNotice:
		if res.FirstPreemptNotice.Kind == 0 {
			res.FirstPreemptNotice = e
		}
	}
}

// Agent kinds as small numbers, for the per-sample and per-grant checks.
const (
	kindVictim uint8 = iota
	kindAdaptive
	kindNaive
	kindStorm
	kindProbe
	kindBackfill
)

// campState is what the recorder, the sampling and the metrics need of
// one campaign, indexed by campaign id (= cast index).
type campState struct {
	kind       uint8
	group      int     // display group
	stormGroup int     // index into Result.Storms, -1 for a non-storm
	bucket     float64 // GPU bucket B
}

// world is one run in progress.
type world struct {
	s        Scenario
	b        alloc
	agents   []Agent
	camps    []campState
	sciences []*science // naive ones first, as the report lists them
	probes   []*probe
	res      *Result
	// study measures the policy-study metrics (nil unless the scenario
	// names its policy).
	study *study
	// skipper is the policy as an event skipper and quiet the agents as
	// quiet agents, when the run may skip quiet ticks (nil otherwise);
	// lastBusy is the quiet agent that last had something to do.
	skipper  policy.EventSkipper
	quiet    []quietAgent
	lastBusy int

	keepSeries bool
	stats      sampleStats
	values     []displayValues // one per display group, reused per sample
	// sampleCamps are the campaigns group by group (planSample).
	sampleCamps []sampleCamp
	// stormRate is the storms' summed sustained rate, the excess baseline
	// (R × storms when all storms share R, as model.md §8 writes it).
	stormRate float64
}

func newWorld(s Scenario, opt Options) (*world, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	pa, err := newAllocator(&s)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidScenario, err)
	}
	b := newAlloc(pa)
	cast := s.cast()
	res := &Result{Scenario: s, Cast: cast}
	w := &world{s: s, b: b, res: res, camps: make([]campState, len(cast)), agents: make([]Agent, 0, len(cast))}
	res.Groups = make([]DisplayGroup, 0, len(cast))
	rec := &recorder{res: res, keep: opt.Journal, w: w}
	pa.SetRecorder(rec)

	// Display groups, in order of first appearance; their members share
	// one backing array.
	members := make([]int, 0, len(cast))
	for i := range cast {
		name := cast[i].GroupName()
		if !slices.ContainsFunc(res.Groups, func(d DisplayGroup) bool { return d.Name == name }) {
			res.Groups = append(res.Groups, DisplayGroup{Name: name, Agent: cast[i].Agent})
		}
	}
	for g := range res.Groups {
		from := len(members)
		for i := range cast {
			if cast[i].GroupName() == res.Groups[g].Name {
				members = append(members, i)
				w.camps[i].group = g
			}
		}
		res.Groups[g].Members = members[from:len(members):len(members)]
	}
	w.values = make([]displayValues, len(res.Groups))
	flowSums := make([]float64, 2*len(res.Groups))
	w.stats.io, w.stats.inference = flowSums[:len(res.Groups)], flowSums[len(res.Groups):]
	nScience := 0
	for i := range cast {
		if isScience(cast[i].Agent) {
			nScience++
		}
	}
	w.sciences = make([]*science, 0, nScience)

	var tasks *taskSet
	var tasksSeed int64
	sameRate, firstRate, nStorms := true, 0.0, 0
	for i := range cast {
		c := &cast[i]
		env := c.Envelope(s.Pool)
		id, err := pa.Register(env)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalidScenario, err)
		}
		bs := base{name: c.Name, b: b, id: id}
		cs := &w.camps[i]
		cs.bucket, cs.stormGroup = env.Bucket, -1
		switch c.Agent {
		case AgentVictim:
			cs.kind = kindVictim
			w.agents = append(w.agents, &victim{base: bs, gpus: c.GPUs, period: c.Period, lease: c.Lease})
		case AgentAdaptive, AgentNaive:
			// The paper's two campaigns share one task list.
			seed := s.Seed + int64(c.Stream)
			if tasks == nil || len(tasks.tasks) != c.Tasks || tasksSeed != seed {
				tasks, tasksSeed = taskSetFor(seed, c.Tasks), seed
			}
			if c.Agent == AgentNaive {
				cs.kind = kindNaive
				a := &naive{science: science{bs, newWorkList(tasks, false)}, target: c.GPUs, lease: c.Lease}
				w.agents = append(w.agents, a)
				nNaive := 0
				for _, sc := range w.sciences {
					if w.camps[sc.id].kind == kindNaive {
						nNaive++
					}
				}
				w.sciences = slices.Insert(w.sciences, nNaive, &a.science)
			} else {
				cs.kind = kindAdaptive
				a := &adaptive{science: science{bs, newWorkList(tasks, true)}, env: env,
					maxWant: c.GPUs, minWant: c.MinGPUs, starvedMin: c.StarvedGPUs, hotHorizon: c.HotHorizon, lease: c.Lease,
					oppMax: c.OpportunisticMax, oppKeep: c.OpportunisticKeep, oppLease: c.OpportunisticLease,
					hotEnough: float64((c.GPUs + 1) * c.HotHorizon)}
				w.agents = append(w.agents, a)
				w.sciences = append(w.sciences, &a.science)
			}
		case AgentStorm:
			cs.kind = kindStorm
			w.agents = append(w.agents, &storm{base: bs, lo: c.Window.Start, hi: c.Window.End,
				target: c.GPUs, period: c.Period, lease: c.Lease, inference: c.InferenceDemand})
			if nStorms == 0 {
				firstRate = env.Sustained
			}
			sameRate = sameRate && env.Sustained == firstRate
			nStorms++
			g := cs.group
			sg := slices.IndexFunc(res.Storms, func(r StormReport) bool { return r.group == g })
			if sg < 0 {
				sg = len(res.Storms)
				res.Storms = append(res.Storms, StormReport{
					CampaignReport: CampaignReport{Name: res.Groups[g].Name},
					group:          g, window: c.Window, BurstCeiling: env.BurstCeiling, Sustained: env.Sustained,
				})
			}
			cs.stormGroup = sg
		case AgentProbe:
			cs.kind = kindProbe
			p := &probe{base: bs, gpus: c.GPUs, period: c.Period, lease: c.Lease, giveUp: c.GiveUp}
			w.agents = append(w.agents, p)
			w.probes = append(w.probes, p)
		case AgentBackfill:
			cs.kind = kindBackfill
			w.agents = append(w.agents, &backfill{base: bs, headroom: c.Headroom, minRequest: c.MinRequest, lease: c.Lease})
		}
	}
	if s.Policy != "" {
		w.study = newStudy(w)
		for _, a := range w.agents {
			if v, ok := a.(*victim); ok {
				v.study = w.study
			}
		}
	}
	if sameRate {
		w.stormRate = firstRate * float64(nStorms)
	} else {
		for i := range cast {
			if cast[i].Agent == AgentStorm {
				w.stormRate += pa.Envelope(policy.CampaignID(i)).Sustained
			}
		}
	}

	// The invariant the report opens with: one more campaign whose
	// guarantee would overbook the pool is refused, and nothing changes.
	// Its guarantee is one GPU more than the pool has left unguaranteed, so
	// that it overbooks whatever the pool (the prototype's fixed 400 GPUs
	// were accepted, and held for the whole run, at pools ≥ 560 + 16 ×
	// storms). A refused registration leaves the broker untouched and
	// journals nothing.
	if !opt.skipOverbookProof {
		res.OverbookRefusal = overbookProof(pa, s.Pool)
	}

	w.skipper, w.quiet = w.skipperFor(opt)
	w.keepSeries = opt.Series
	w.planSample()
	if opt.Series {
		n, ng := s.Ticks/s.SampleEvery, len(res.Groups)
		sr := &res.Series
		sr.T = make([]int, 0, n)
		sr.Multiplier = make([]float64, 0, n)
		sr.Held = make([][]int, ng)
		sr.Fill, sr.Spent = make([][]float64, ng), make([][]float64, ng)
		sr.IO, sr.Inference = make([][]float64, ng), make([][]float64, ng)
		for d := range ng {
			sr.Held[d] = make([]int, 0, n)
			sr.Fill[d] = make([]float64, 0, n)
			sr.Spent[d] = make([]float64, 0, n)
			sr.IO[d] = make([]float64, 0, n)
			sr.Inference[d] = make([]float64, 0, n)
		}
	}
	return w, nil
}

// overbookProof tries to register a campaign whose guarantee overbooks the
// pool by one GPU and returns the broker's answer: nil means the broker
// accepted it, which violates the invariant (and has changed the run).
func overbookProof(b policy.Allocator, pool int) error {
	g := 0
	for i := range b.NumCampaigns() {
		g += b.Envelope(policy.CampaignID(i)).Guaranteed
	}
	over := pool - g + 1
	_, err := b.Register(policy.Envelope{Name: "overbooked", Budget: 1000, Guaranteed: over, Sustained: float64(over), BurstCeiling: over, Bucket: 1000, Class: policy.Interactive})
	return err
}

// ErrInvariantViolated is what Result.CheckInvariants wraps.
var ErrInvariantViolated = errors.New("invariant violated")

// CheckInvariants reports a violated run invariant: today, that the
// broker accepted a registration that overbooks the guarantees.
func (r *Result) CheckInvariants() error {
	if !errors.Is(r.OverbookRefusal, policy.ErrOverbooked) {
		return fmt.Errorf("%w: a campaign that overbooks the guarantees was not refused (%v)", ErrInvariantViolated, r.OverbookRefusal)
	}
	return nil
}

// Run simulates one scenario and measures it. It is deterministic: the same
// scenario gives the same Result, on any machine.
func Run(s Scenario, opt Options) (*Result, error) {
	w, err := newWorld(s, opt)
	if err != nil {
		return nil, err
	}
	res := w.run()
	// The result holds no part of the work lists: the next run may reuse
	// them.
	releaseWorkLists(w.sciences)
	return res, nil
}

func (w *world) run() *Result {
	if w.skipper != nil {
		w.runEvents(w.skipper)
	} else {
		w.runTicks()
	}
	w.finish()
	return w.res
}

// runTicks steps every tick. It is step written out, so that a run that
// cannot skip costs what it did before event skipping (callgrind,
// BenchmarkScenario); the event-skipping tests compare the two.
//
// An agent whose Step does nothing at all before some tick (a sleeper:
// the victim between its period ticks, a storm outside its window, an
// idle probe) is left out of the tick's agents until then (awakeAgents):
// the others step in cast order as before, and a Step that would return
// at once changes nothing.
func (w *world) runTicks() {
	s := &w.s
	aw := newAwakeAgents(w.agents)
	for t := 1; t <= s.Ticks; t++ {
		if t >= aw.next {
			aw.list(t)
		}
		for _, a := range aw.active {
			a.Step(t)
		}
		if len(aw.awake) > 0 {
			aw.slept(t)
		}
		if bk := w.b.bk; bk != nil {
			bk.Tick()
		} else {
			w.b.a.Tick()
		}
		if w.study != nil && t >= s.StormStart && t < s.StormEnd {
			w.study.ticks(w, 1)
		}
		if t%s.SampleEvery == 0 {
			w.sample(t)
		}
	}
}

// awakeAgents is the agents runTicks steps at a tick: every agent but the
// sleepers (sleeper) before their wake tick, in cast order. The list is
// redone only when a sleeper wakes or falls asleep: a test per agent
// per tick cost more than the calls it saved (BenchmarkScenario,
// callgrind).
type awakeAgents struct {
	agents   []Agent
	sleepers []sleeper // by agent, nil for an agent that is never asleep
	wake     []int     // by agent: its next wake tick (0: awake at once)
	active   []Agent   // the agents awake at this tick, in cast order
	awake    []int     // the sleepers among them, by index
	next     int       // the tick at which to redo the list
}

func newAwakeAgents(agents []Agent) *awakeAgents {
	n := len(agents)
	ints := make([]int, 2*n)
	aw := &awakeAgents{agents: agents, sleepers: make([]sleeper, n), wake: ints[:n:n],
		active: make([]Agent, 0, n), awake: ints[n:n]}
	for i, a := range agents {
		aw.sleepers[i], _ = a.(sleeper)
	}
	return aw
}

// list redoes the list for tick t.
func (aw *awakeAgents) list(t int) {
	aw.active, aw.awake, aw.next = aw.active[:0], aw.awake[:0], math.MaxInt
	for i, a := range aw.agents {
		if aw.wake[i] > t {
			aw.next = min(aw.next, aw.wake[i])
			continue
		}
		aw.active = append(aw.active, a)
		if aw.sleepers[i] != nil {
			aw.awake = append(aw.awake, i)
		}
	}
}

// slept asks the awake sleepers, after the steps of tick t, when they
// next act (a sleeper's state changes only in its own Step).
func (aw *awakeAgents) slept(t int) {
	for _, i := range aw.awake {
		if aw.wake[i] = aw.sleepers[i].wakeAt(t + 1); aw.wake[i] > t+1 {
			aw.next = t + 1
		}
	}
}

// step runs tick t: every agent's step in cast order, the policy's tick,
// the storm-window study and the sample.
func (w *world) step(t int) {
	s := &w.s
	for _, a := range w.agents {
		a.Step(t)
	}
	if bk := w.b.bk; bk != nil {
		bk.Tick()
	} else {
		w.b.a.Tick()
	}
	if w.study != nil && t >= s.StormStart && t < s.StormEnd {
		w.study.ticks(w, 1)
	}
	if t%s.SampleEvery == 0 {
		w.sample(t)
	}
}

// sampleStats accumulates, sample by sample and in sample order, what the
// metrics and the report need of the series, so that a run which keeps no
// series (a sweep's) measures exactly the same.
type sampleStats struct {
	n                           int
	productive                  float64 // Σ (victim + science + storm held) / pool
	stormSum, stormN, stormPeak int
	stormExcess                 float64
	io, inference               []float64 // per display group, Σ of last-tick use
}

// displayValues is one display group's state at a sample.
type displayValues struct {
	held                                 int
	tokens, bucket, spent, io, inference float64
}

// mean is a sum over samples divided by their number (NaN without one).
func (st *sampleStats) mean(sum float64) float64 {
	if st.n == 0 {
		return math.NaN()
	}
	return sum / float64(st.n)
}

// groupMean is a display group's mean of a per-sample sum (NaN without a
// sample).
func (st *sampleStats) groupMean(sums []float64, g int) float64 {
	return st.mean(sums[g])
}

func fillFraction(tokens, bucket float64) float64 {
	if bucket <= 0 {
		return 0
	}
	return tokens / bucket
}

func (w *world) finish() {
	res := w.res
	b := w.b
	for _, p := range w.probes {
		res.Probe = append(res.Probe, p.obs...)
	}
	st := &w.stats
	for _, sc := range w.sciences {
		g := w.camps[sc.id].group
		cr := CampaignReport{
			Name: sc.name, Science: sc.work.science, Completed: sc.work.completed, Spent: b.Spent(sc.id),
			MeanIO: st.groupMean(st.io, g), MeanInference: st.groupMean(st.inference, g),
			IOThrottled: b.a.FlowThrottled(sc.id, policy.IO), InferenceThrottled: b.a.FlowThrottled(sc.id, policy.Inference),
		}
		res.Science = append(res.Science, cr)
		switch w.camps[sc.id].kind {
		case kindNaive:
			if res.Naive.Name == "" {
				res.Naive = cr
			}
		case kindAdaptive:
			if res.Adaptive.Name == "" {
				res.Adaptive = cr
			}
		}
	}
	for k := range res.Storms {
		sr := &res.Storms[k]
		sr.MeanIO, sr.MeanInference = st.groupMean(st.io, sr.group), st.groupMean(st.inference, sr.group)
		sr.MeanHeld = math.NaN()
		if sr.n > 0 {
			sr.MeanHeld = float64(sr.sum) / float64(sr.n)
		}
		for _, i := range res.Groups[sr.group].Members {
			id := policy.CampaignID(i)
			sr.Spent += b.Spent(id)
			sr.IOThrottled += b.a.FlowThrottled(id, policy.IO)
			sr.InferenceThrottled += b.a.FlowThrottled(id, policy.Inference)
		}
	}
	if len(res.Storms) > 0 {
		res.Storm = res.Storms[0].CampaignReport
	}
	res.Metrics = computeMetrics(w)
	res.Envelopes = make([]policy.Envelope, len(w.camps))
	for i := range res.Envelopes {
		res.Envelopes[i] = b.a.Envelope(policy.CampaignID(i))
	}
}
