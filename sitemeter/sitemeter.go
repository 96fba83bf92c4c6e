package sitemeter

import (
	"fmt"
	"slices"

	"github.com/bursar-hpc/bursar/platform"
	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/baseline"
	"github.com/bursar-hpc/bursar/trace"
)

// Broker is the Bursar broker as a site meters a trace on it: the broker
// itself, unchanged, behind the registrations and the per-tick step that
// make the group the metered campaign and give every group a scavenger
// campaign for idle GPUs (package doc). Every call but Register,
// RequestRigid, Tick, SetRecorder, SetTickByTick and Clone goes to the
// broker as it is.
type Broker struct {
	*policy.Broker
	w       *trace.Workload
	perUser bool
	// campOf is each workload campaign's index by its envelope's name
	// (read only: the replay registers every campaign by name).
	campOf map[string]int
	// metered and scav are each workload group's metered and scavenger
	// campaigns in the broker (−1: not yet registered); metered is unused
	// when each campaign is metered on its own (perUser).
	metered, scav []policy.CampaignID
	// groupOf is each broker campaign's workload group, scavenger whether
	// it is one; −1 for a campaign that is not the log's (an agent's).
	groupOf []int32
	isScav  []bool
	// reqs is each broker request id's job filing (root −1: not a job's),
	// appended in id order. A copy (Clone) shares what was written before
	// it and writes only beyond: the slices are clipped.
	reqs []filing
	// envs are the groups' metered envelopes.
	envs       []policy.Envelope
	guaranteed int // Σ of every registered guarantee (the agents')
	rec        policy.Recorder
	tickByTick bool
	// restart is how a preempted job restarts (SetRestart); noticed
	// holds, for each job lease under notice, the run its checkpoints
	// keep, written on its release.
	restart baseline.Restart
	noticed []keptRun
	// moved counts the jobs filed on a scavenger (Moved).
	moved int
	// scratch
	back, out []move
	kinds     []uint8
}

// filing is how one of a trace job's requests was filed: root is the
// request id the replay knows the job by (its first filing since it was
// last requeued), camp its metered campaign, class its own class and run
// its run (less what its checkpoints kept).
type filing struct {
	root  int32
	camp  int32
	class policy.Class
	run   int64
	// stay marks a job its metered campaign can never hold (wider than
	// its cap with a full bucket): filed on the scavenger from the start,
	// it is never filed back.
	stay bool
}

// keptRun is the seconds of run lease's checkpoints keep.
type keptRun struct{ lease, kept int }

var (
	_ policy.Allocator      = (*Broker)(nil)
	_ policy.RigidRequester = (*Broker)(nil)
	_ policy.EventSkipper   = (*Broker)(nil)
	_ policy.TickByTicker   = (*Broker)(nil)
	_ trace.Cloner          = (*Broker)(nil)
)

// New is b, a fresh broker with no campaign registered, metering w as a
// site would: one metered campaign per group (w.Meter group, the
// default) or per workload campaign (w.Meter user), and one scavenger
// per group.
func New(b *policy.Broker, w *trace.Workload) (*Broker, error) {
	if b.NumCampaigns() != 0 || b.Now() != 0 {
		return nil, fmt.Errorf("sitemeter: the broker must be fresh")
	}
	s := &Broker{Broker: b, w: w, perUser: w.Meter == trace.MeterUser, campOf: make(map[string]int, len(w.Campaigns)),
		metered: make([]policy.CampaignID, len(w.Groups)), scav: make([]policy.CampaignID, len(w.Groups))}
	for c := range w.Campaigns {
		s.campOf[w.Campaigns[c].Name] = c
	}
	for g := range w.Groups {
		s.metered[g], s.scav[g] = -1, -1
	}
	if !s.perUser {
		s.envs = w.GroupEnvelopes()
	}
	return s, nil
}

// ScavengerName is the name of group's scavenger campaign.
func ScavengerName(group string) string { return group + " (scavenger)" }

// ScavengerEnvelope is a group's scavenger campaign: unmetered (R =
// burst = the pool, so its cap is the pool whatever its tokens), no
// guarantee, the opportunistic class (every non-opportunistic request
// may reclaim its leases), a budget out of reach.
func ScavengerEnvelope(group string, pool int) policy.Envelope {
	return policy.Envelope{
		Name: ScavengerName(group), Budget: trace.UnboundedBudget,
		Sustained: float64(pool), BurstCeiling: pool, Class: policy.Opportunistic,
	}
}

// Register registers a campaign. A workload campaign (found by name)
// gets its group's metered campaign (registered with the group's
// envelope on the group's first member; with w.Meter user, its own, as
// given but for the budget) and, on its group's first member, the
// group's scavenger; any other campaign (an agent) is registered as
// given.
func (s *Broker) Register(env policy.Envelope) (policy.CampaignID, error) {
	c, ok := s.campOf[env.Name]
	if !ok {
		id, err := s.register(env, -1, false)
		if err == nil {
			s.guaranteed += env.Guaranteed
		}
		return id, err
	}
	g := s.w.Campaigns[c].Group
	var id policy.CampaignID
	switch {
	case s.perUser:
		env.Budget = trace.UnboundedBudget
		var err error
		if id, err = s.register(env, g, false); err != nil {
			return -1, err
		}
	case s.metered[g] >= 0:
		return s.metered[g], nil
	default:
		var err error
		if id, err = s.register(s.envs[g], g, false); err != nil {
			return -1, err
		}
		s.metered[g] = id
	}
	if s.scav[g] < 0 {
		sc, err := s.register(ScavengerEnvelope(s.w.Groups[g].Name, s.Config().Pool), g, true)
		if err != nil {
			return -1, err
		}
		s.scav[g] = sc
	}
	return id, nil
}

func (s *Broker) register(env policy.Envelope, g int, scav bool) (policy.CampaignID, error) {
	id, err := s.Broker.Register(env)
	if err != nil {
		return id, err
	}
	s.groupOf = append(s.groupOf, int32(g))
	s.isScav = append(s.isScav, scav)
	return id, nil
}

// RequestRigid files a trace job on its metered campaign c, as the broker
// does (policy.Broker.RequestRigid), and notes the filing: a job the
// meter holds back may be moved to its group's scavenger (Tick).
//
// A job wider than its metered campaign can ever hold (policy.Broker.
// MostEver: the cap with a full bucket), which the broker would deny, is
// filed whole on its group's scavenger at once and stays there: under
// lookback shares a group's entitlement and bucket come from its record
// before the window, and a job wider than any it ran then could never
// run metered (docs/traces.md "Bursar as a site meters it").
func (s *Broker) RequestRigid(c policy.CampaignID, gpus, estimate, run int, cls policy.Class, submitted int) (int, error) {
	if s.isJobCampaign(c) && gpus > s.Broker.MostEver(c, estimate) {
		id, err := s.Broker.RequestRigid(s.scav[s.groupOf[c]], gpus, estimate, run, policy.Opportunistic, submitted)
		if err == nil {
			s.note(id, filing{root: int32(id), camp: int32(c), class: cls, run: int64(run), stay: true})
			s.moved++
		}
		return id, err
	}
	id, err := s.Broker.RequestRigid(c, gpus, estimate, run, cls, submitted)
	if err == nil && s.isJobCampaign(c) {
		s.note(id, filing{root: int32(id), camp: int32(c), class: cls, run: int64(run)})
	}
	return id, err
}

// isJobCampaign is whether c is a workload campaign's metered campaign.
func (s *Broker) isJobCampaign(c policy.CampaignID) bool {
	return int(c) < len(s.groupOf) && s.groupOf[c] >= 0 && !s.isScav[c]
}

// note records request id's filing f.
func (s *Broker) note(id int, f filing) {
	for len(s.reqs) < id {
		s.reqs = append(s.reqs, filing{root: -1})
	}
	if len(s.reqs) == id {
		s.reqs = append(s.reqs, f)
		return
	}
	s.reqs[id] = f
}

// filingOf is request id's filing (root −1: not a job's).
func (s *Broker) filingOf(id int) filing {
	if id >= 0 && id < len(s.reqs) {
		return s.reqs[id]
	}
	return filing{root: -1}
}

// move is a pending request scavenge withdraws and files again: its id
// and campaign, and the campaign and class it goes to.
type move struct {
	id   int
	camp policy.CampaignID
	to   policy.CampaignID
	cls  policy.Class
}

// Tick is the broker's tick, then the site's step after its admission
// (only where the tick admitted: a quiet tick changes nothing the step
// reads). First every scavenger request the admission did not grant goes
// back to its metered campaign, with its original submit time: the idle
// GPUs it was filed for went to others. Then, in admission order, every
// job the meter holds back (its campaign's cap less what it holds is
// below its GPUs) that the idle GPUs not yet given can seat is withdrawn
// and filed whole on its group's scavenger, in the opportunistic class,
// with its original submit time: the next tick's admission grants it
// after the metered requests. A scavenger lease is never promoted: it
// runs to its job's end unless a metered request reclaims it (the
// broker's preemption of opportunistic leases, with grace), and the
// replay then files the job again on its metered campaign.
func (s *Broker) Tick() {
	busy := s.tickByTick || s.Broker.NextChange() <= s.Now()+1
	s.Broker.Tick()
	if busy {
		if err := s.scavenge(); err != nil {
			// Every refiling is of a request the broker accepted
			// moments before, on campaigns whose caps reach the pool.
			panic(fmt.Sprintf("sitemeter: %v", err))
		}
	}
}

// scavenge is Tick's step after admission.
//
// It reads the broker's pending list in place, run by run
// (policy.Broker.PendingRun: no copy), twice: once for the idle GPUs and
// the jobs the meter holds back, then for the requests to move, each
// copied into a move before any is made (a move shifts the list).
func (s *Broker) scavenge() error {
	runs := s.NumPendingRuns()
	if runs == 0 {
		return nil
	}
	// The idle GPUs: free, less the unmet guarantees' reserve, less what
	// the metered jobs the meter lets through will take at the next
	// admission: in admission order, each one that the free GPUs, those
	// under notice and the opportunistic leases could seat (the broker
	// reclaims for it, docs/studies.md §6.6) claims its GPUs from the
	// free ones first. A job no reclaim can seat claims nothing: it waits
	// for leases to end, and the GPUs free meanwhile are idle.
	reserve := s.reserve()
	idle := s.open() - reserve
	reach := idle + s.reclaimable()
	// What the second read does with each request, by the first
	// (whose filing lookups, one per request, are most of its cost).
	const (
		noMove  uint8 = iota // nothing: no filing of the replay's, or not held back
		goBack               // a scavenger's request: back to its metered campaign
		heldOut              // held back by the meter: out if the idle GPUs seat it
	)
	kinds, backs := s.kinds[:0], 0
	for ri := range runs {
		run := s.PendingRun(ri)
		for i := range run {
			r := &run[i]
			kind := noMove
			switch f := s.filingOf(r.ID); {
			case f.root < 0:
			case s.isScav[r.Campaign]:
				if !f.stay {
					kind = goBack
					backs++
				}
			case s.RateCap(r.Campaign, r.Duration)-s.Held(r.Campaign, policy.AnyClass) < r.GPUs:
				kind = heldOut
			case r.GPUs <= reach && r.Class != policy.Opportunistic:
				idle -= min(r.GPUs, max(idle, 0))
				reach -= r.GPUs
			}
			kinds = append(kinds, kind)
		}
	}
	s.kinds = kinds
	back, out := s.back[:0], s.out[:0]
	k := 0
	// The read stops where nothing is left to move: no request to send
	// back, and no idle GPU for a held-back job (every request holds one
	// at least), as on a full machine with a long queue.
	for ri := 0; ri < runs && (backs > 0 || idle > 0); ri++ {
		run := s.PendingRun(ri)
		for i := range run {
			r := &run[i]
			switch kinds[k] {
			case goBack:
				backs--
				f := s.filingOf(r.ID)
				back = append(back, move{r.ID, r.Campaign, policy.CampaignID(f.camp), f.class})
			case heldOut:
				if r.GPUs <= idle {
					out = append(out, move{r.ID, r.Campaign, s.scav[s.groupOf[r.Campaign]], policy.Opportunistic})
					idle -= r.GPUs
				}
			}
			k++
		}
	}
	s.back, s.out = back, out
	for _, m := range back {
		if err := s.refile(m); err != nil {
			return err
		}
	}
	for _, m := range out {
		if err := s.refile(m); err != nil {
			return err
		}
	}
	return nil
}

// refile withdraws m's request and files it on m's campaign, with its
// original submit time.
func (s *Broker) refile(m move) error {
	r, ok, err := s.Withdraw(m.camp, m.id)
	if err != nil || !ok {
		return fmt.Errorf("request %d of campaign %d: not pending (%v)", m.id, m.camp, err)
	}
	f := s.filingOf(m.id)
	id, err := s.Broker.RequestRigid(m.to, r.GPUs, r.Duration, int(f.run), m.cls, r.Submitted)
	if err != nil {
		return fmt.Errorf("request %d refiled on campaign %d: %w", m.id, m.to, err)
	}
	s.note(id, f)
	if s.isScav[m.to] {
		s.moved++
	}
	return nil
}

// open is the GPUs free for a job now: the pool's free count, less on a
// platform the GPUs of nodes out of service (draining or down,
// docs/hosts.md), which no grant can take; otherwise the broker would move
// held-back jobs to the scavenger for GPUs it cannot seat.
func (s *Broker) open() int {
	free := s.Free()
	if on, ok := any(s.Broker).(interface{ Placer() *platform.Placer }); ok {
		if p := on.Placer(); p != nil {
			free = min(free, p.Open())
		}
	}
	return free
}

// reserve is the GPUs kept free for guarantees not yet held (the
// agents'; a trace campaign has none): what no other campaign may take.
func (s *Broker) reserve() int {
	if s.guaranteed == 0 {
		return 0
	}
	n := 0
	for c := range s.NumCampaigns() {
		id := policy.CampaignID(c)
		n += max(0, s.Envelope(id).Guaranteed-s.Held(id, policy.AnyClass))
	}
	return n
}

// reclaimable is the GPUs of the leases under notice and of the
// opportunistic leases not under notice: what a reclaim can free.
func (s *Broker) reclaimable() int {
	n := 0
	for _, l := range s.Leases() {
		if l.UnderNotice || l.Class == policy.Opportunistic {
			n += l.GPUs
		}
	}
	return n
}

// Moved is the number of times a job was filed on a scavenger.
func (s *Broker) Moved() int { return s.moved }

// Scavenger reports whether campaign c is a group's scavenger.
func (s *Broker) Scavenger(c policy.CampaignID) bool { return int(c) < len(s.isScav) && s.isScav[c] }

// SetRecorder routes the journal to r, with every job's lease named by
// the request id the replay filed the job under: a job moved to a
// scavenger keeps its id in the journal.
func (s *Broker) SetRecorder(r policy.Recorder) {
	s.rec = r
	if r == nil {
		s.Broker.SetRecorder(nil)
		return
	}
	s.Broker.SetRecorder(s)
}

// SetRestart makes every preempted job restart by r (docs/studies.md
// §6.7; the zero value, the default, from scratch): the release record
// of a preempted job lease carries the seconds of run its checkpoints
// kept, the last checkpoint before the notice, from which the replay
// requeues what is left of the job. The broker itself keeps no
// checkpoints.
func (s *Broker) SetRestart(r baseline.Restart) { s.restart = r }

// Record passes the broker's record e on, its lease id the job's, and a
// preempted job lease's release with the run its checkpoints kept.
func (s *Broker) Record(e policy.Event) {
	switch e.Kind {
	case policy.EventGrant, policy.EventRelease, policy.EventPreemptNotice:
		f := s.filingOf(e.Lease)
		if f.root < 0 {
			break
		}
		if s.restart.Checkpoint > 0 {
			s.checkpoint(&e)
		}
		e.Lease = int(f.root)
	}
	s.rec.Record(e)
}

// checkpoint notes, at a job lease's notice, what its checkpoints keep
// (its grant is in the lease list), and writes it into the release that
// ends it by preemption.
func (s *Broker) checkpoint(e *policy.Event) {
	switch {
	case e.Kind == policy.EventPreemptNotice:
		for _, l := range s.Leases() {
			if l.ID == e.Lease {
				s.noticed = append(s.noticed, keptRun{lease: e.Lease, kept: s.restart.Kept(l.Granted, e.T)})
				return
			}
		}
	case e.Kind == policy.EventRelease && e.Reason == policy.ReasonPreempted:
		for i, k := range s.noticed {
			if k.lease == e.Lease {
				e.Kept = k.kept
				s.noticed = slices.Delete(s.noticed, i, i+1)
				return
			}
		}
	}
}

// Restart is the restart rule of its preempted jobs (SetRestart).
func (s *Broker) Restart() baseline.Restart { return s.restart }

// Root is the id the replay knows the job of the broker's lease by (its
// first filing; −1: not a job's). A failure process reads the broker's
// leases off its placer's nodes (trace's hosts hook, docs/hosts.md) and
// finds their jobs through it.
func (s *Broker) Root(lease int) int { return int(s.filingOf(lease).root) }

// ReleaseSeated releases the broker's lease, on whichever campaign holds
// it (a job's metered campaign or its group's scavenger): a failure
// process ending the leases on a node.
func (s *Broker) ReleaseSeated(lease int) error {
	for _, l := range s.Leases() {
		if l.ID == lease {
			return s.Broker.ReleaseLease(l.Campaign, lease)
		}
	}
	return fmt.Errorf("sitemeter: no lease %d", lease)
}

// SetTickByTick makes every tick admit and step (policy.TickByTicker).
func (s *Broker) SetTickByTick(on bool) {
	s.tickByTick = on
	s.Broker.SetTickByTick(on)
}

// Clone is a copy of the whole state without a recorder (trace.Cloner):
// the broker's own copy, and the filings shared up to now (the copy
// appends its own beyond, into its own memory).
func (s *Broker) Clone() (policy.Allocator, error) {
	b, err := s.Broker.Clone()
	if err != nil {
		return nil, err
	}
	c := *s
	c.Broker = b.(*policy.Broker)
	c.rec = nil
	c.reqs = slices.Clip(s.reqs)
	c.metered, c.scav = slices.Clone(s.metered), slices.Clone(s.scav)
	c.groupOf, c.isScav = slices.Clip(s.groupOf), slices.Clip(s.isScav)
	c.back, c.out, c.kinds = nil, nil, nil
	c.noticed = slices.Clone(s.noticed)
	return &c, nil
}
