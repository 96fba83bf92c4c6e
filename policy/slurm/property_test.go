package slurm

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/baseline"
	bt "github.com/bursar-hpc/bursar/policy/baseline/baselinetest"
)

// pjob is one rigid job of a random log: its campaign, submit tick (≥ 1),
// GPUs, estimate and run (≤ estimate).
type pjob struct{ camp, submit, gpus, est, run int }

// drawLog draws a small log on pool GPUs over camps campaigns, by submit.
func drawLog(t *rapid.T, pool, camps int) []pjob {
	n := rapid.IntRange(1, 25).Draw(t, "jobs")
	jobs := make([]pjob, n)
	for i := range jobs {
		est := rapid.IntRange(1, 3000).Draw(t, "est")
		jobs[i] = pjob{
			camp:   rapid.IntRange(0, camps-1).Draw(t, "camp"),
			submit: rapid.IntRange(1, 2000).Draw(t, "submit"),
			gpus:   rapid.IntRange(1, pool).Draw(t, "gpus"),
			est:    est,
			run:    rapid.IntRange(1, est).Draw(t, "run"),
		}
	}
	slices.SortStableFunc(jobs, func(a, b pjob) int { return a.submit - b.submit })
	return jobs
}

// drawKnobs draws knobs small enough that every rule shows in a short log.
func drawKnobs(t *rapid.T) Knobs {
	k := DefaultKnobs()
	k.SchedInterval = rapid.IntRange(1, 90).Draw(t, "sched_interval")
	k.DefaultQueueDepth = rapid.IntRange(1, 30).Draw(t, "default_queue_depth")
	k.BfInterval = rapid.IntRange(1, 60).Draw(t, "bf_interval")
	k.BfResolution = rapid.SampledFrom([]int{1, 7, 60}).Draw(t, "bf_resolution")
	k.BfWindow = rapid.IntRange(1, 6000).Draw(t, "bf_window")
	k.BfMaxJobTest = rapid.IntRange(1, 30).Draw(t, "bf_max_job_test")
	w := []float64{0, 1000}
	k.WAge = rapid.SampledFrom(w).Draw(t, "w_age")
	k.WFairshare = rapid.SampledFrom(w).Draw(t, "w_fairshare")
	k.WJobSize = rapid.SampledFrom(w).Draw(t, "w_job_size")
	k.WQOS = rapid.SampledFrom(w).Draw(t, "w_qos")
	k.MaxAge = float64(rapid.IntRange(1, 5000).Draw(t, "max_age"))
	k.HalfLife = float64(rapid.IntRange(1, 5000).Draw(t, "half_life"))
	k.CalcPeriod = rapid.IntRange(1, 400).Draw(t, "calc_period")
	k.NoFairTree = rapid.Bool().Draw(t, "no_fair_tree")
	return k
}

// newCore is a Core under rule r with camps campaigns of random shares.
func newCore(t *rapid.T, pool, camps int, r *Rule, shares []float64) *baseline.Core {
	k, err := baseline.New(bt.Config(pool, 0), r)
	if err != nil {
		t.Fatal(err)
	}
	for c := range camps {
		if _, err := k.Register(bt.Env(fmt.Sprintf("c%d", c), shares[c], policy.AgentBurst)); err != nil {
			t.Fatal(err)
		}
	}
	return k
}

// replay files the jobs at their submit ticks and ticks the Core until
// every job has ended, skipping the quiet ticks as a trace replay does
// (unless the Core ticks tick by tick), calling after once after each
// tick (every: tick every second, skipping nothing). It returns each job's
// grant tick.
func replay(t *rapid.T, k *baseline.Core, jobs []pjob, every bool, after func()) []int {
	start := make([]int, len(jobs))
	ids := make([]int, len(jobs))
	next := 0
	file := func() {
		for next < len(jobs) && jobs[next].submit <= k.Now()+1 {
			j := jobs[next]
			id, err := k.RequestRigid(policy.CampaignID(j.camp), j.gpus, j.est, j.run, policy.AgentBurst, j.submit)
			if err != nil {
				t.Fatal(err)
			}
			ids[next] = id
			next++
		}
	}
	for guard := 0; ; guard++ {
		if guard > 200000 {
			t.Fatalf("no end after %d ticks", guard)
		}
		file()
		if next == len(jobs) && len(k.Pending()) == 0 && len(k.Leases()) == 0 {
			break
		}
		if !every {
			to := k.NextChange() - 1
			if next < len(jobs) {
				to = min(to, jobs[next].submit-1)
			}
			k.SkipTo(to)
			file()
		}
		k.Tick()
		if after != nil {
			after()
		}
		for _, l := range k.Leases() {
			if l.Granted == k.Now() {
				x := slices.Index(ids, l.ID)
				start[x] = l.Granted
			}
		}
	}
	return start
}

func drawShares(t *rapid.T, camps int) []float64 {
	s := make([]float64, camps)
	for c := range s {
		s[c] = float64(rapid.IntRange(1, 4).Draw(t, "share"))
	}
	return s
}

// The pool is never over-committed, and no backfill start delays a
// reservation: after every pass (bf_resolution 1, so that reservations are
// exact), the running leases until their estimated ends, the jobs the pass
// started among them, and every reservation the pass made never hold more
// than the pool at any time. A job the pass started later in priority
// order than a reserved one therefore took nothing its reservation needs.
func TestNeverOvercommitsNorDelaysAReservation(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		pool := rapid.IntRange(1, 32).Draw(t, "pool")
		camps := rapid.IntRange(1, 4).Draw(t, "camps")
		knobs := drawKnobs(t)
		knobs.BfResolution = 1
		r := NewRule(knobs)
		r.bf.record = true
		k := newCore(t, pool, camps, r, drawShares(t, camps))
		jobs := drawLog(t, pool, camps)
		passes := 0
		replay(t, k, jobs, false, func() {
			if k.Leased() > pool || k.FreeGeneral() < 0 {
				t.Fatalf("tick %d: %d GPUs leased of %d", k.Now(), k.Leased(), pool)
			}
			if r.bf.passAt != k.Now() {
				return
			}
			passes++
			var times []int
			for _, l := range k.Leases() {
				times = append(times, l.Granted)
			}
			for _, v := range r.bf.reserved {
				times = append(times, v.Start)
			}
			for _, at := range times {
				held := 0
				for _, l := range k.Leases() {
					if l.Granted <= at && at < l.Estimated() {
						held += l.GPUs
					}
				}
				for _, v := range r.bf.reserved {
					if v.Start <= at && at < v.End {
						held += v.GPUs
					}
				}
				if held > pool {
					t.Fatalf("pass at %d: %d GPUs held or reserved at %d, pool %d (reservations %v)", k.Now(), held, at, pool, r.bf.reserved)
				}
			}
		})
		_ = passes
	})
}

// Skipping a backfill pass that nothing could change (backfillDue), and the
// quiet ticks between events (NextEvent), decide nothing differently: on
// random logs and knobs the journal is byte for byte the one of a Core
// that ticks every second and runs the pass at every bf_interval tick.
func TestSkippedPassesChangeNothing(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		pool := rapid.IntRange(1, 32).Draw(t, "pool")
		camps := rapid.IntRange(1, 4).Draw(t, "camps")
		knobs := drawKnobs(t)
		shares := drawShares(t, camps)
		jobs := drawLog(t, pool, camps)
		var got, want bt.Journal
		a := newCore(t, pool, camps, NewRule(knobs), shares)
		a.SetRecorder(&got)
		replay(t, a, jobs, false, nil)
		oracle := NewRule(knobs)
		oracle.always = true
		b := newCore(t, pool, camps, oracle, shares)
		b.SetTickByTick(true)
		b.SetRecorder(&want)
		replay(t, b, jobs, true, nil)
		g, w := strings.Split(string(got.Bytes), "\n"), strings.Split(string(want.Bytes), "\n")
		for i := range max(len(g), len(w)) {
			if i >= len(g) || i >= len(w) || g[i] != w[i] {
				t.Logf("skipping:\n%s\nevery:\n%s", got.Bytes, want.Bytes)
				t.Fatalf("journals differ at record %d:\nskipping:   %s\nevery pass: %s", i, g[min(i, len(g)-1)], w[min(i, len(w)-1)])
			}
		}
	})
}

// With every weight 0 and bf_max_job_test = 1, and an event run's
// default_queue_depth no shorter than the queue, the policy is strict
// FCFS without backfilling, exactly: the main scheduler starts jobs in
// submit order until one does not fit, and the pass tests only the
// queue's first job, which the main scheduler has just failed to start on
// the same free GPUs, so it starts nothing. (EASY differs only by the jobs
// it backfills behind its head's reservation; bf_max_job_test = 1 allows
// none.) Each job then starts at the first time t ≥ its submit and the
// previous job's start at which the jobs before it still running at t
// leave it room.
func TestOneJobTestedIsStrictFCFS(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		pool := rapid.IntRange(1, 32).Draw(t, "pool")
		knobs := drawKnobs(t)
		knobs.WAge, knobs.WFairshare, knobs.WJobSize, knobs.WQOS = 0, 0, 0, 0
		knobs.BfMaxJobTest = 1
		knobs.DefaultQueueDepth = 100
		jobs := drawLog(t, pool, 1)
		k := newCore(t, pool, 1, NewRule(knobs), []float64{1})
		got := replay(t, k, jobs, false, nil)
		want := make([]int, len(jobs))
		for i, j := range jobs {
			s := j.submit
			if i > 0 {
				s = max(s, want[i-1])
			}
			cands := []int{s}
			for p := range i {
				if e := want[p] + jobs[p].run; e > s {
					cands = append(cands, e)
				}
			}
			slices.Sort(cands)
			for _, c := range cands {
				used := 0
				for p := range i {
					if want[p] <= c && c < want[p]+jobs[p].run {
						used += jobs[p].gpus
					}
				}
				if used+j.gpus <= pool {
					want[i] = c
					break
				}
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("starts %v, strict FCFS %v", got, want)
		}
	})
}

// The queue order is Slurm's (sort_job_queue2): after every admission the
// jobs it ordered and still waiting are, in the order the rule keeps, a
// plain sort of them by priority (descending), submit time and id, each
// priority the one of_ gives for the generation. The rule orders a new
// generation from the last one's order and merges later jobs in; the
// plain sort starts from nothing. Random logs and knobs, a weight on.
func TestQueueIsInPriorityOrder(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		pool := rapid.IntRange(1, 32).Draw(t, "pool")
		camps := rapid.IntRange(1, 4).Draw(t, "camps")
		knobs := drawKnobs(t)
		if knobs.WAge == 0 && knobs.WFairshare == 0 {
			knobs.WAge = 1000
		}
		r := NewRule(knobs)
		k := newCore(t, pool, camps, r, drawShares(t, camps))
		replay(t, k, drawLog(t, pool, camps), false, func() {
			if r.sortedGen == 0 {
				return
			}
			var got, want []int
			for _, id := range r.sorted {
				if k.Index(id) >= 0 {
					got = append(got, id)
				}
			}
			prio := map[int]float64{}
			for i, pend := 0, k.Pending(); i < len(pend); i++ {
				if q := &pend[i]; q.ID <= r.seenID && !k.Campaign(q.Campaign).Filler {
					want = append(want, q.ID)
					prio[q.ID] = r.prio.of(k, r, q)
				}
			}
			slices.SortFunc(want, func(a, b int) int {
				qa, qb := k.Pend(k.Index(a)), k.Pend(k.Index(b))
				if c := cmp.Compare(prio[b], prio[a]); c != 0 {
					return c
				}
				if c := cmp.Compare(qa.Submitted, qb.Submitted); c != 0 {
					return c
				}
				return cmp.Compare(a, b)
			})
			if !slices.Equal(got, want) {
				t.Fatalf("tick %d: queue %v, sorted afresh %v (priorities %v)", k.Now(), got, want, prio)
			}
		})
	})
}

// Leaving out the runs that could start or notice nothing in any order
// (stuck) decides nothing differently, where that hangs on more than the
// rigid jobs' widths: a filler whose leases the blocked job may notice
// (and whose GPUs, once the notice ends them, are reserved for it) and
// agents' requests that start in part. On random logs and knobs (a
// weight on, so that the order moves) the journal is byte for byte the
// one of the same replay running both whenever due (unstuck). Dropping
// any clause of stuck fails it: the rigid test (an agent's request
// starts in part), the reservation (a job waits on GPUs its notices
// freed) or the filler's holding (its lease goes unnoticed).
//
// The oracle skips quiet ticks too: an agent's request that expires
// (after policy.RequestTTL) is no change (Core.Changes), so the rule
// may see it later than a Core ticking every second would (a difference
// of the skips, not of stuck).
func TestStuckRunsChangeNothing(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		fillerLogAsOracle(t, func(r *Rule) { r.unstuck = true }, "stuck left out", "every run")
	})
}

// What the rule keeps in place of reading the pending list, and the
// victim search it leaves out, decide nothing differently: on
// TestStuckRunsChangeNothing's random logs (a filler, agents' requests,
// notices and their reservations) the journal is byte for byte the one
// of the same replay with every such figure read from the list and
// every blocked job's search made (plain). stuck's test by the kept
// narrowest width fails here if it counts no agent's request waiting
// (flex: one starts in part where the kept test said stuck) or leaves
// out the reservations (a job waits on GPUs its notices freed); so does
// the main scheduler's skip of the victim search if it skips it while a
// filler holds a lease (the lease goes unnoticed).
func TestKeptFiguresAreTheWalks(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		fillerLogAsOracle(t, func(r *Rule) { r.plain = true }, "kept", "walked")
	})
}

// fillerLog is a random log on a pool shared with a filler: its jobs
// (those of campaign camps are the filler's, flex marks the agents'
// requests among the others), the knobs (a weight on, so that the order
// moves), the notices' grace and a horizon past which replays stop.
type fillerLog struct {
	pool, camps, grace, horizon int
	knobs                       Knobs
	shares                      []float64
	jobs                        []pjob
	flex                        []bool
}

func drawFillerLog(t *rapid.T) fillerLog {
	s := fillerLog{
		pool:  rapid.IntRange(1, 32).Draw(t, "pool"),
		camps: rapid.IntRange(1, 3).Draw(t, "camps"),
		grace: rapid.IntRange(0, 120).Draw(t, "grace"),
		knobs: drawKnobs(t),
	}
	if s.knobs.WAge == 0 && s.knobs.WFairshare == 0 {
		s.knobs.WAge = 1000
	}
	s.shares = drawShares(t, s.camps)
	s.jobs = drawLog(t, s.pool, s.camps+1)
	// Each job of the extra campaign is the filler's; of the others,
	// some are agents' requests (not rigid).
	s.flex = make([]bool, len(s.jobs))
	for i := range s.flex {
		s.flex[i] = s.jobs[i].camp < s.camps && rapid.IntRange(0, 3).Draw(t, "flex") == 0
	}
	// A horizon: with a filler a job can wait for ever (its notices'
	// GPUs reserved for it while a job of higher priority, which they
	// do not fit, blocks the main scheduler), and replays must then
	// agree up to it.
	s.horizon = 2000 + s.grace
	for _, j := range s.jobs {
		s.horizon += j.est
	}
	return s
}

// journal replays the log under rule r, skipping the quiet ticks, and
// returns the Core's journal.
func (s fillerLog) journal(t *rapid.T, r *Rule) []byte {
	k, err := baseline.New(bt.Config(s.pool, s.grace), r)
	if err != nil {
		t.Fatal(err)
	}
	for c := range s.camps {
		if _, err := k.Register(bt.Env(fmt.Sprintf("c%d", c), s.shares[c], policy.AgentBurst)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := k.Register(bt.Env("filler", 0, policy.Opportunistic)); err != nil {
		t.Fatal(err)
	}
	var j bt.Journal
	k.SetRecorder(&j)
	next := 0
	file := func() {
		for next < len(s.jobs) && s.jobs[next].submit <= k.Now()+1 {
			jb := s.jobs[next]
			var err error
			if jb.camp == s.camps || s.flex[next] {
				_, err = k.Request(policy.CampaignID(jb.camp), jb.gpus, jb.run, policy.AnyClass)
			} else {
				_, err = k.RequestRigid(policy.CampaignID(jb.camp), jb.gpus, jb.est, jb.run, policy.AgentBurst, jb.submit)
			}
			if err != nil {
				t.Fatal(err)
			}
			next++
		}
	}
	for k.Now() < s.horizon {
		file()
		if next == len(s.jobs) && len(k.Pending()) == 0 && len(k.Leases()) == 0 {
			break
		}
		to := min(k.NextChange()-1, s.horizon-1)
		if next < len(s.jobs) {
			to = min(to, s.jobs[next].submit-1)
		}
		k.SkipTo(to)
		file()
		k.Tick()
	}
	return j.Bytes
}

// fillerLogAsOracle replays one drawn filler log (drawFillerLog) under
// the rule as it is and under an oracle, the same rule with its plain
// path set by oracle, and fails t unless the two journals are the same
// byte for byte (named rule and plain in the message).
func fillerLogAsOracle(t *rapid.T, oracle func(*Rule), rule, plain string) {
	s := drawFillerLog(t)
	o := NewRule(s.knobs)
	oracle(o)
	sameJournals(t, s.journal(t, NewRule(s.knobs)), s.journal(t, o), rule, plain)
}

// sameJournals fails at the first record where got and want differ,
// naming them gotName and wantName.
func sameJournals(t *rapid.T, got, want []byte, gotName, wantName string) {
	g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := range max(len(g), len(w)) {
		if i >= len(g) || i >= len(w) || g[i] != w[i] {
			t.Logf("%s:\n%s\n%s:\n%s", gotName, got, wantName, want)
			t.Fatalf("journals differ at record %d:\n%s: %s\n%s: %s", i, gotName, g[min(i, len(g)-1)], wantName, w[min(i, len(w)-1)])
		}
	}
}

// The kept queue is the whole queue: after every tick the order (asked
// again, as an admission would; the same generation gives the same
// priorities) holds every waiting job and no other, in a plain sort's
// order by priority, submit time and id, and a job is marked waiting
// exactly while it is in the pending list. The rule reads neither the
// pending list nor the Core's index of it within a generation (Filed,
// Left): a queue returned as kept while a job was filed (the shortcut
// ignoring filed), a job left marked waiting (Left not clearing it) or
// one filed unmarked (Filed not marking it) each fails here. So does a
// least want (leastWaiting, NextEvent's) kept past the job that had it
// leaving, or not lowered by a narrower job filed, and a job's own least
// want (wantOf, the backfill's) not kept at its filing.
func TestKeptQueueIsEveryWaitingJob(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		pool := rapid.IntRange(1, 32).Draw(t, "pool")
		camps := rapid.IntRange(1, 4).Draw(t, "camps")
		knobs := drawKnobs(t)
		if knobs.WAge == 0 && knobs.WFairshare == 0 {
			knobs.WAge = 1000
		}
		r := NewRule(knobs)
		k := newCore(t, pool, camps, r, drawShares(t, camps))
		replay(t, k, drawLog(t, pool, camps), false, func() {
			least := math.MaxInt
			for i, pend := 0, k.Pending(); i < len(pend); i++ {
				least = min(least, pend[i].GPUs)
			}
			if got := r.leastWaiting(k); got != least {
				t.Fatalf("tick %d: least want kept %d, the list's %d", k.Now(), got, least)
			}
			got := slices.Clone(r.order(k))
			var want []int
			prio := map[int]float64{}
			for i, pend := 0, k.Pending(); i < len(pend); i++ {
				q := &pend[i]
				want = append(want, q.ID)
				prio[q.ID] = r.prio.of(k, r, q)
				if !r.waiting(q.ID) {
					t.Fatalf("tick %d: job %d waits, not marked", k.Now(), q.ID)
				}
				if got := r.wantOf(k, q.ID); got != r.leastWant(q) {
					t.Fatalf("tick %d: job %d's least want kept as %d, is %d", k.Now(), q.ID, got, r.leastWant(q))
				}
			}
			for id := 1; id < r.keyBase+len(r.keys); id++ {
				if r.waiting(id) && k.Index(id) < 0 {
					t.Fatalf("tick %d: job %d left, still marked", k.Now(), id)
				}
			}
			slices.SortFunc(want, func(a, b int) int {
				qa, qb := k.Pend(k.Index(a)), k.Pend(k.Index(b))
				if c := cmp.Compare(prio[b], prio[a]); c != 0 {
					return c
				}
				if c := cmp.Compare(qa.Submitted, qb.Submitted); c != 0 {
					return c
				}
				return cmp.Compare(a, b)
			})
			if !slices.Equal(got, want) {
				t.Fatalf("tick %d: queue %v, sorted afresh %v (priorities %v)", k.Now(), got, want, prio)
			}
		})
	})
}
