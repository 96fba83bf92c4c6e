package engine

import (
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/bursar-hpc/bursar/policy"
)

// Display campaigns: the series and the report show these five (all storms
// summed as one).
const (
	DisplayVictim = iota
	DisplayAdaptive
	DisplayNaive
	DisplayStorm
	DisplayBackfill
	NumDisplay
)

// DisplayNames are the display campaigns' names, in display order.
var DisplayNames = [NumDisplay]string{"victim", "adaptive-sci", "naive-sci", "storm", "backfill"}

// Series is the sampled state of a run, one entry per sample (every
// SampleEvery ticks, after the broker's tick). The storm columns aggregate
// every storm: GPUs, credits and flows summed, fill as total tokens over
// total bucket.
type Series struct {
	T          []int
	Multiplier []float64
	Held       [NumDisplay][]int
	// Fill is the GPU bucket's fill fraction (tokens / B).
	Fill  [NumDisplay][]float64
	Spent [NumDisplay][]float64
	// IO (GB/s) and Inference (tokens/s) used in the last tick.
	IO        [NumDisplay][]float64
	Inference [NumDisplay][]float64
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

// CampaignReport is one campaign's end-of-run figures for the report.
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

// Options says what a run keeps beyond its metrics.
type Options struct {
	// Journal keeps the JSON Lines journal (Result.Journal).
	Journal bool
	// Series keeps the sampled series (Result.Series); without it the
	// series is empty but every metric is measured the same.
	Series bool
	// skipOverbookProof leaves the overbooking proof out (tests check
	// that it never changes a run).
	skipOverbookProof bool
}

// Result is everything one run produced.
type Result struct {
	Scenario Scenario
	Metrics  Metrics
	Series   Series
	Grants   []Grant
	Probe    []ProbeObservation
	// OverbookRefusal is the broker's refusal of an extra campaign with a
	// 400-GPU guarantee, the proof that guarantees are never overbooked.
	OverbookRefusal error
	// Journal is the JSON Lines journal (only with Options.Journal);
	// JournalRecords counts records whether kept or not.
	Journal        []byte
	JournalRecords int
	// StormThrottles counts the throttle records of every storm.
	StormThrottles int
	// FirstVictimGrant, FirstThrottle and FirstPreemptNotice are sample
	// journal records (Kind 0 when there was none).
	FirstVictimGrant, FirstThrottle, FirstPreemptNotice policy.Event
	// Naive, Adaptive and Storm summarise those campaigns.
	Naive, Adaptive, Storm CampaignReport
	// Envelopes are the registered campaigns' envelopes, in registration
	// order; display maps each display campaign to its envelopes (every
	// storm for DisplayStorm).
	Envelopes []policy.Envelope
	display   [NumDisplay][]int
}

// DisplayFlowRates are the display campaigns' sustained io (GB/s) and
// inference (tokens/s) rates, summed over the storms, NaN where a campaign
// has no envelope in that dimension.
func (r *Result) DisplayFlowRates() (io, inference [NumDisplay]float64) {
	for d := range NumDisplay {
		io[d], inference[d] = math.NaN(), math.NaN()
		for _, i := range r.display[d] {
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
	res     *Result
	keep    bool
	victim  policy.CampaignID
	isStorm []bool
}

func (r *recorder) Record(e policy.Event) {
	res := r.res
	res.JournalRecords++
	if r.keep {
		res.Journal = e.AppendJSON(res.Journal)
		res.Journal = append(res.Journal, '\n')
	}
	switch e.Kind {
	case policy.EventGrant:
		res.Grants = append(res.Grants, Grant{T: e.T, Campaign: e.CampaignID, Name: e.Campaign, Class: e.Class, GPUs: e.GPUs, Latency: e.Latency, Path: e.Path})
		if e.CampaignID == r.victim && res.FirstVictimGrant.Kind == 0 {
			res.FirstVictimGrant = e
		}
	case policy.EventThrottle:
		if res.FirstThrottle.Kind == 0 {
			res.FirstThrottle = e
		}
		if r.isStorm[e.CampaignID] {
			res.StormThrottles++
		}
	case policy.EventPreemptNotice:
		if res.FirstPreemptNotice.Kind == 0 {
			res.FirstPreemptNotice = e
		}
	}
}

func stormName(i int) string {
	if i == 0 {
		return "storm"
	}
	return "storm" + strconv.Itoa(i+1)
}

// world is one run in progress.
type world struct {
	s        Scenario
	b        *policy.Broker
	agents   []Agent
	victim   *victim
	adaptive *adaptive
	naive    *naive
	storms   []*storm
	probe    *probe
	backfill *backfill
	res      *Result

	keepSeries bool
	stats      sampleStats
	buckets    []float64 // GPU bucket B per campaign
}

func scienceEnvelope(name string, s *Scenario) policy.Envelope {
	return policy.Envelope{
		Name: name, Budget: 20000, Guaranteed: 64,
		Sustained: s.SciRate, BurstCeiling: s.SciBurst, Bucket: s.SciBucket,
		Class:     policy.AgentBurst,
		IO:        &policy.Flow{Rate: 6, Bucket: 3600, Ceiling: 16},
		Inference: &policy.Flow{Rate: 500, Bucket: 100000, Ceiling: 2000},
	}
}

func newWorld(s Scenario, opt Options) (*world, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	b, err := policy.New(policy.Config{
		Pool: s.Pool, Grace: s.Grace, GrantTimeOnly: s.Leaky,
		IOCapacity: s.IOCapacity, InferenceCapacity: s.InferenceCapacity,
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidScenario, err)
	}
	res := &Result{Scenario: s}
	w := &world{s: s, b: b, res: res}
	rec := &recorder{res: res, keep: opt.Journal}
	b.SetRecorder(rec)

	register := func(env policy.Envelope) (base, error) {
		id, err := b.Register(env)
		if err != nil {
			return base{}, fmt.Errorf("%w: %v", ErrInvalidScenario, err)
		}
		return base{name: env.Name, b: b, id: id}, nil
	}
	tasks := taskSetFor(s.Seed, s.Tasks)

	vb, err := register(policy.Envelope{Name: "victim", Budget: 5000, Guaranteed: 32, Sustained: 32, BurstCeiling: VictimBurstCeiling, Bucket: 60000, Class: policy.Interactive})
	if err != nil {
		return nil, err
	}
	w.victim = &victim{vb}
	ab, err := register(scienceEnvelope("adaptive-sci", &s))
	if err != nil {
		return nil, err
	}
	w.adaptive = &adaptive{science: science{ab, newWorkList(tasks, true)}, env: b.Envelope(ab.id)}
	nb, err := register(scienceEnvelope("naive-sci", &s))
	if err != nil {
		return nil, err
	}
	w.naive = &naive{science{nb, newWorkList(tasks, false)}}
	for i := range s.Storms {
		sb, err := register(policy.Envelope{
			Name: stormName(i), Budget: 8000, Guaranteed: 16,
			Sustained: s.StormRate, BurstCeiling: s.StormBurst, Bucket: s.StormBucket,
			Class:     policy.AgentBurst,
			Inference: &policy.Flow{Rate: 50, Bucket: 5000, Ceiling: 500},
		})
		if err != nil {
			return nil, err
		}
		w.storms = append(w.storms, &storm{base: sb, lo: s.StormStart, hi: s.StormEnd})
	}
	if s.Probe {
		pb, err := register(policy.Envelope{Name: "probe", Budget: 1e9, Sustained: probeGPUs, BurstCeiling: probeGPUs, Bucket: 1e9, Class: policy.AgentBurst})
		if err != nil {
			return nil, err
		}
		w.probe = &probe{base: pb}
	}
	bb, err := register(policy.Envelope{Name: "backfill", Budget: 1e9, Sustained: float64(s.Pool), BurstCeiling: s.Pool, Bucket: 1e9, Class: policy.Opportunistic})
	if err != nil {
		return nil, err
	}
	w.backfill = &backfill{base: bb, headroom: s.Headroom}

	// The invariant the report opens with: one more campaign whose
	// guarantee would overbook the pool is refused, and nothing changes.
	// Its guarantee is one GPU more than the pool has left unguaranteed, so
	// that it overbooks whatever the pool (the prototype's fixed 400 GPUs
	// were accepted, and held for the whole run, at pools ≥ 560 + 16 ×
	// storms). A refused registration leaves the broker untouched and
	// journals nothing.
	if !opt.skipOverbookProof {
		res.OverbookRefusal = overbookProof(b, s.Pool)
	}

	w.agents = append(w.agents, w.victim, w.adaptive, w.naive)
	rec.isStorm = make([]bool, b.NumCampaigns())
	for _, st := range w.storms {
		w.agents = append(w.agents, st)
		rec.isStorm[st.id] = true
	}
	if w.probe != nil {
		w.agents = append(w.agents, w.probe)
	}
	w.agents = append(w.agents, w.backfill)
	rec.victim = w.victim.id

	w.buckets = make([]float64, b.NumCampaigns())
	for i := range w.buckets {
		w.buckets[i] = b.Envelope(policy.CampaignID(i)).Bucket
	}
	w.keepSeries = opt.Series
	if opt.Series {
		n := s.Ticks / s.SampleEvery
		sr := &res.Series
		sr.T = make([]int, 0, n)
		sr.Multiplier = make([]float64, 0, n)
		for d := range NumDisplay {
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
func overbookProof(b *policy.Broker, pool int) error {
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
	return w.run(), nil
}

func (w *world) run() *Result {
	s := &w.s
	for t := 1; t <= s.Ticks; t++ {
		for _, a := range w.agents {
			a.Step(t)
		}
		w.b.Tick()
		if t%s.SampleEvery == 0 {
			w.sample(t)
		}
	}
	w.finish()
	return w.res
}

// sampleStats accumulates, sample by sample and in sample order, what the
// metrics and the report need of the series, so that a run which keeps no
// series (a sweep's) measures exactly the same.
type sampleStats struct {
	n                           int
	productive                  float64 // Σ (victim + science + storm held) / pool
	stormSum, stormN, stormPeak int
	stormExcess                 float64
	io, inference               [NumDisplay]float64 // Σ of last-tick use
}

// displayValues is one display campaign's state at a sample.
type displayValues struct {
	held                                 int
	tokens, bucket, spent, io, inference float64
}

func (w *world) sample(t int) {
	b := w.b
	var v [NumDisplay]displayValues
	read := func(d int, id policy.CampaignID) {
		x := &v[d]
		x.held += b.Held(id, policy.AnyClass)
		x.tokens += b.Tokens(id)
		x.bucket += w.buckets[id]
		x.spent += b.Spent(id)
		x.io += b.FlowUsedLastTick(id, policy.IO)
		x.inference += b.FlowUsedLastTick(id, policy.Inference)
	}
	read(DisplayVictim, w.victim.id)
	read(DisplayAdaptive, w.adaptive.id)
	read(DisplayNaive, w.naive.id)
	for _, st := range w.storms {
		read(DisplayStorm, st.id)
	}
	read(DisplayBackfill, w.backfill.id)

	s, st := &w.s, &w.stats
	st.n++
	h := v[DisplayVictim].held + v[DisplayAdaptive].held + v[DisplayNaive].held + v[DisplayStorm].held
	st.productive += float64(h) / float64(s.Pool)
	if t >= s.StormStart && t < s.StormEnd {
		sh := v[DisplayStorm].held
		st.stormSum += sh
		st.stormN++
		st.stormPeak = max(st.stormPeak, sh)
		st.stormExcess += max(0, float64(sh)-s.StormRate*float64(s.Storms)) * float64(s.SampleEvery)
	}
	for d := range NumDisplay {
		st.io[d] += v[d].io
		st.inference[d] += v[d].inference
	}

	if !w.keepSeries {
		return
	}
	sr := &w.res.Series
	sr.T = append(sr.T, t)
	sr.Multiplier = append(sr.Multiplier, b.Multiplier())
	for d := range NumDisplay {
		x := &v[d]
		sr.Held[d] = append(sr.Held[d], x.held)
		sr.Fill[d] = append(sr.Fill[d], fillFraction(x.tokens, x.bucket))
		sr.Spent[d] = append(sr.Spent[d], x.spent)
		sr.IO[d] = append(sr.IO[d], x.io)
		sr.Inference[d] = append(sr.Inference[d], x.inference)
	}
}

// mean is a sum over samples divided by their number (NaN without one).
func (st *sampleStats) mean(sum float64) float64 {
	if st.n == 0 {
		return math.NaN()
	}
	return sum / float64(st.n)
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
	if w.probe != nil {
		res.Probe = w.probe.obs
	}
	sciReport := func(sc *science, d int) CampaignReport {
		return CampaignReport{
			Name: sc.name, Science: sc.work.science, Completed: sc.work.completed, Spent: b.Spent(sc.id),
			MeanIO: w.stats.mean(w.stats.io[d]), MeanInference: w.stats.mean(w.stats.inference[d]),
			IOThrottled: b.FlowThrottled(sc.id, policy.IO), InferenceThrottled: b.FlowThrottled(sc.id, policy.Inference),
		}
	}
	res.Naive = sciReport(&w.naive.science, DisplayNaive)
	res.Adaptive = sciReport(&w.adaptive.science, DisplayAdaptive)
	res.Storm = CampaignReport{Name: "storm", MeanIO: w.stats.mean(w.stats.io[DisplayStorm]), MeanInference: w.stats.mean(w.stats.inference[DisplayStorm])}
	for _, st := range w.storms {
		res.Storm.Spent += b.Spent(st.id)
		res.Storm.IOThrottled += b.FlowThrottled(st.id, policy.IO)
		res.Storm.InferenceThrottled += b.FlowThrottled(st.id, policy.Inference)
	}
	res.Metrics = computeMetrics(w)
	res.Envelopes = make([]policy.Envelope, b.NumCampaigns())
	for i := range res.Envelopes {
		res.Envelopes[i] = b.Envelope(policy.CampaignID(i))
	}
	res.display[DisplayVictim] = []int{int(w.victim.id)}
	res.display[DisplayAdaptive] = []int{int(w.adaptive.id)}
	res.display[DisplayNaive] = []int{int(w.naive.id)}
	for _, st := range w.storms {
		res.display[DisplayStorm] = append(res.display[DisplayStorm], int(st.id))
	}
	res.display[DisplayBackfill] = []int{int(w.backfill.id)}
}
