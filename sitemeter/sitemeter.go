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
	// reqs is each broker request id's job filing (root −1: not a job's)
	// from id len(shared) on, appended in id order; shared, in a copy
	// (Clone), are the original's as of the copy, read and never written.
	// A copy that files a request (scavenge) appends to its own reqs, a
	// few, where appending to the original's clipped slice copied all of
	// it: a thousand forks of a full-log replay allocated 1.3 GB so.
	reqs, shared []filing
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
	// sent counts, by scavenger campaign, the jobs the last scavenge
	// filed on it (sentTo lists those with some): the only requests a
	// scavenger can hold that the next scavenge sends back, since each
	// sends back every one there is. A scavenger no job was sent to holds
	// only jobs that stay, and its runs are passed by unread.
	sent   []int32
	sentTo []policy.CampaignID
	// parked are the jobs their metered campaign can never hold (filing
	// stay), in submit order, while no idle GPU is theirs: kept out of the
	// broker, so that its admission cannot grant them the GPUs a metered
	// request is reclaiming (docs/traces.md, "Bursar as a site meters
	// it"). scavenge files one on its scavenger when the idle GPUs can
	// seat it, as it moves a held-back job, and takes it back if the next
	// admission does not grant it. It is kept by width (jobPark), so that
	// scavenge reads only the jobs the idle GPUs can seat: a long log
	// parks wide jobs for days.
	parked jobPark
	// scratch
	back, out []move
	unpark    []parkedJob
	cands     []int32
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
	// its cap with a full bucket): it waits in the park, not on its
	// metered campaign, and goes back there, not to the campaign.
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
// MostEver: the cap with a full bucket), which the broker would deny, can
// only scavenge: under lookback shares a group's entitlement and bucket
// come from its record before the window, and a job wider than any it ran
// then could never run metered (docs/traces.md "Bursar as a site meters
// it"). It is filed on its group's scavenger, for an id, and withdrawn at
// once into the park, from which scavenge files it when idle GPUs can
// seat it. Pending on the scavenger, it would take GPUs the moment they
// free, the ones a wide metered request reclaims too: that request,
// seated only when all its GPUs are free, reclaimed them again and again
// (a livelock, docs/traces.md).
func (s *Broker) RequestRigid(c policy.CampaignID, gpus, estimate, run int, cls policy.Class, submitted int) (int, error) {
	if s.isJobCampaign(c) && gpus > s.Broker.MostEver(c, estimate) {
		sc := s.scav[s.groupOf[c]]
		id, err := s.Broker.RequestRigid(sc, gpus, estimate, run, policy.Opportunistic, submitted)
		if err != nil {
			return id, err
		}
		f := filing{root: int32(id), camp: int32(c), class: cls, run: int64(run), stay: true}
		s.note(id, f)
		r, ok, err := s.Withdraw(sc, id)
		if err != nil || !ok {
			return id, fmt.Errorf("sitemeter: job filed as request %d on campaign %d: not pending (%v)", id, sc, err)
		}
		s.AddWork(s.parked.add(parkedJob{req: r, filing: f}))
		return id, nil
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
	if id < len(s.shared) {
		// Never so far (ids are new); the shared ones made the copy's own.
		s.reqs = append(slices.Clone(s.shared), s.reqs...)
		s.shared = nil
	}
	id -= len(s.shared)
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
	switch {
	case id < 0:
	case id < len(s.shared):
		return s.shared[id]
	case id-len(s.shared) < len(s.reqs):
		return s.reqs[id-len(s.shared)]
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
// the scavenger requests to send back, then for the requests to move,
// each copied into a move before any is made (a move shifts the list).
// Both reads pass a metered run by unread where nothing in it can count:
// no GPU is idle, or its narrowest job (policy.Broker.
// PendingRunNarrowest) is wider than what it could take (the first
// read) or be moved for (the second). On a long log the queue is mostly
// such runs, jobs wider than the GPUs the machine has free; what is
// read is counted in the broker's work (policy.Broker.AddWork).
func (s *Broker) scavenge() error {
	runs := s.NumPendingRuns()
	if runs == 0 && s.parked.n == 0 {
		return nil
	}
	// The idle GPUs: free, less the unmet guarantees' reserve, less what
	// the metered jobs the meter lets through will take at the next
	// admission: in admission order, each one that the free GPUs, those
	// under notice and the opportunistic leases could seat (the broker
	// reclaims for it, docs/studies.md §6.6) claims its GPUs from the
	// free ones first. A job no reclaim can seat claims nothing: it waits
	// for leases to end, and the GPUs free meanwhile are idle. Once no
	// GPU is idle none will be (a claim takes at most what is idle), and
	// no job is moved out: only the scavengers' runs are read on, for
	// the requests to send back. reach stays at least idle, so a run
	// whose narrowest job is wider than reach claims nothing and has no
	// job to move.
	reserve := s.reserve()
	idle := s.open() - reserve
	if idle <= 0 && len(s.sentTo) == 0 {
		return nil // no job to move out or unpark, none to send back
	}
	reach := idle + s.reclaimable()
	// The first read notes the runs it reads the requests of (cands):
	// the only ones with a request the second may move.
	backs, walked, cands := 0, 0, s.cands[:0]
	for ri := range runs {
		run := s.PendingRun(ri)
		switch {
		case s.isScav[run[0].Campaign]:
			if !s.sentOn(run[0].Campaign) {
				continue
			}
			cands = append(cands, int32(ri))
			walked += len(run)
			for i := range run {
				if f := s.filingOf(run[i].ID); f.root >= 0 {
					backs++
				}
			}
		case idle > 0 && s.PendingRunNarrowest(ri) <= reach:
			cands = append(cands, int32(ri))
			// Once no GPU is idle, nothing the run's rest claims
			// counts: its requests are not read.
			for i := 0; i < len(run) && idle > 0; i++ {
				walked++
				r := &run[i]
				if s.filingOf(r.ID).root < 0 || s.heldBack(r) {
					continue
				}
				if r.GPUs <= reach && r.Class != policy.Opportunistic {
					idle -= min(r.GPUs, max(idle, 0))
					reach -= r.GPUs
				}
			}
		}
	}
	back, out := s.back[:0], s.out[:0]
	// The second read stops where nothing is left to move: no request to
	// send back, and no idle GPU for a held-back job (every request holds
	// one at least), as on a full machine with a long queue. It reads
	// only the first's runs: a metered run the first passed by has no
	// job as narrow as the GPUs idle at its end.
	n := 0
	for ; n < len(cands) && (backs > 0 || idle > 0); n++ {
		ri := int(cands[n])
		run := s.PendingRun(ri)
		switch {
		case s.isScav[run[0].Campaign]:
			if !s.sentOn(run[0].Campaign) {
				continue
			}
			walked += len(run)
			for i := range run {
				r := &run[i]
				if f := s.filingOf(r.ID); f.root >= 0 {
					backs--
					to := policy.CampaignID(f.camp)
					if f.stay {
						to = toPark
					}
					back = append(back, move{r.ID, r.Campaign, to, f.class})
				}
			}
		case idle > 0 && s.PendingRunNarrowest(ri) <= idle:
			for i := 0; i < len(run) && idle > 0; i++ {
				walked++
				r := &run[i]
				if r.GPUs <= idle && s.filingOf(r.ID).root >= 0 && s.heldBack(r) {
					out = append(out, move{r.ID, r.Campaign, s.scav[s.groupOf[r.Campaign]], policy.Opportunistic})
					idle -= r.GPUs
				}
			}
		}
	}
	// Then the park, in submit order, for what idle GPUs are left: its
	// jobs are opportunistic wherever they run, after every metered one.
	// The walk stops when no GPU is idle.
	unpark, read := s.unpark[:0], 0
	if idle > 0 && s.parked.n > 0 {
		read++ // the park's narrowest
		if s.parked.narrowest() <= idle {
			var w policy.Work
			unpark, w = s.parked.take(idle, unpark)
			s.AddWork(w)
			for _, p := range unpark {
				out = append(out, move{-1, -1, s.scav[s.groupOf[p.filing.camp]], policy.Opportunistic})
			}
		}
	}
	s.AddWork(policy.Work{Walked: int64(walked), RunsRead: int64(runs + n + read)})
	s.back, s.out, s.unpark, s.cands = back, out, unpark, cands
	s.noteSent(out)
	for _, m := range back {
		if err := s.refile(m); err != nil {
			return err
		}
	}
	for _, m := range out[:len(out)-len(unpark)] {
		if err := s.refile(m); err != nil {
			return err
		}
	}
	for i, p := range unpark {
		id, err := s.Broker.RequestRigid(out[len(out)-len(unpark)+i].to, p.req.GPUs, p.req.Duration, int(p.filing.run), policy.Opportunistic, p.req.Submitted)
		if err != nil {
			return fmt.Errorf("parked job %d filed on its scavenger: %w", p.filing.root, err)
		}
		s.note(id, p.filing)
		s.moved++
	}
	return nil
}

// toPark is the destination of a move that takes a job back to the park.
const toPark policy.CampaignID = -2

// sentOn is whether the last scavenge filed a job on scavenger c.
func (s *Broker) sentOn(c policy.CampaignID) bool { return int(c) < len(s.sent) && s.sent[c] > 0 }

// noteSent notes the jobs this scavenge files on the scavengers, in
// place of the last one's (every one of which it sends back or was
// granted).
func (s *Broker) noteSent(out []move) {
	for _, c := range s.sentTo {
		s.sent[c] = 0
	}
	s.sentTo = s.sentTo[:0]
	for _, m := range out {
		for int(m.to) >= len(s.sent) {
			s.sent = append(s.sent, 0)
		}
		if s.sent[m.to] == 0 {
			s.sentTo = append(s.sentTo, m.to)
		}
		s.sent[m.to]++
	}
}

// heldBack is whether the meter holds pending request r back: its
// campaign's cap less what it holds is below its GPUs.
func (s *Broker) heldBack(r *policy.Request) bool {
	return s.RateCap(r.Campaign, r.Duration)-s.Held(r.Campaign, policy.AnyClass) < r.GPUs
}

// refile withdraws m's request and files it on m's campaign, with its
// original submit time.
func (s *Broker) refile(m move) error {
	r, ok, err := s.Withdraw(m.camp, m.id)
	if err != nil || !ok {
		return fmt.Errorf("request %d of campaign %d: not pending (%v)", m.id, m.camp, err)
	}
	f := s.filingOf(m.id)
	if m.to == toPark {
		s.AddWork(s.parked.add(parkedJob{req: r, filing: f}))
		return nil
	}
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
// keeps its own beyond them, in its own memory).
func (s *Broker) Clone() (policy.Allocator, error) {
	b, err := s.Broker.Clone()
	if err != nil {
		return nil, err
	}
	c := *s
	c.Broker = b.(*policy.Broker)
	c.rec = nil
	c.shared, c.reqs = slices.Clip(s.reqs), nil
	if len(s.shared) > 0 { // a copy of a copy
		c.shared = append(slices.Clone(s.shared), s.reqs...)
	}
	c.metered, c.scav = slices.Clone(s.metered), slices.Clone(s.scav)
	c.groupOf, c.isScav = slices.Clip(s.groupOf), slices.Clip(s.isScav)
	c.back, c.out, c.unpark, c.cands = nil, nil, nil, nil
	c.parked = s.parked.clone()
	c.sent, c.sentTo = slices.Clone(s.sent), slices.Clone(s.sentTo)
	c.noticed = slices.Clone(s.noticed)
	return &c, nil
}
