package trace

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/policies"
)

// A hand-worked fair start time (docs/studies.md §4.4, §6.17) under FCFS +
// EASY, pool 4, every estimate exact (times in seconds):
//
//	job  submit  GPUs  run
//	J1     0      3    10
//	J2     1      2    10
//	J3     2      2     5
//	J4     3      1    30
//	J5     4      1     1
//
// The replay: J1 starts at 0 (1 GPU free). At 1 the head J2 does not fit;
// its shadow time is J1's end, 10, with 1 + 3 − 2 = 2 extra GPUs. At 2 J3
// does not fit (1 free). At 3 J4 fits in the free GPU and, ending at 33 >
// 10, uses 1 of the 2 extra GPUs: it is backfilled. At 4 J5 does not fit
// (0 free). At 10 J1 ends (3 free): J2 starts (1 free); the head J3 needs 2,
// and the estimated ends give it the shadow time 20 (J2's end: 1 + 2 = 3
// free), with 1 extra; J5 fits and ends by 20: it starts at 10. At 20 J2
// ends and J3 starts. Starts: 0, 10, 20, 3, 10.
//
// Fair starts, each job's own replay with every later submit withheld:
// J1 at 0; J2 at 10 (as above); J3 without J4 and J5: at 10 J1 ends, 4 GPUs
// free, J2 starts and J3 fits beside it: 10. J4 without J5: 3, as above;
// J5 with everything: 10. So J3 alone is late, by 20 − 10 = 10 s: one of
// five jobs late (0.2), mean miss 10 s — J4, submitted after J3, took the
// GPU J3 needed.
func TestFairStartHandWorked(t *testing.T) {
	w := small(4, [4]int64{0, 10, 10, 3}, [4]int64{1, 10, 10, 2}, [4]int64{2, 5, 5, 2}, [4]int64{3, 30, 30, 1}, [4]int64{4, 1, 1, 1})
	sample := []int{0, 1, 2, 3, 4}
	want := []int64{0, 10, 10, 3, 10}
	run := ReplayExactFair(w, sample, 0)
	if got := []int64{run.Records[0].Starts[0], run.Records[1].Starts[0], run.Records[2].Starts[0], run.Records[3].Starts[0], run.Records[4].Starts[0]}; !slices.Equal(got, []int64{0, 10, 20, 3, 10}) {
		t.Fatalf("starts %v", got)
	}
	if !slices.Equal(run.FairStart, want) {
		t.Fatalf("exact replay: fair starts %v, want %v", run.FairStart, want)
	}
	// The same through the allocator path, forking the fifo policy.
	pr := replayPolicy(t, w, "fifo", policies.TraceKnobs(), ReplayOptions{FairStart: sample})
	if !slices.Equal(pr.FairStart, want) {
		t.Fatalf("fifo policy: fair starts %v, want %v", pr.FairStart, want)
	}
	s := FairStarts(run, sample, run.FairStart, 0)
	if s.N != 5 || s.Late != 1 || s.LateFrac != 0.2 || s.MeanMiss != 10 || !(s.LateLo < 0.2 && s.LateHi > 0.2) || !math.IsNaN(s.MissLo) {
		t.Fatalf("%+v", s)
	}
}

// constructed builds a run from (campaign, submit, start, run, gpus) rows:
// a schedule written down rather than replayed.
func constructed(pool int, users int, rows [][5]int64) (*Workload, *Run) {
	w := &Workload{Pool: pool}
	for c := range users {
		w.Campaigns = append(w.Campaigns, Campaign{ID: c, Share: 1 / float64(users)})
	}
	for i, r := range rows {
		w.Jobs = append(w.Jobs, Job{Number: int64(i + 1), Campaign: int(r[0]), User: int(r[0]), Submit: r[1], Run: r[3], Estimate: r[3], GPUs: int(r[4]), LogWait: -1})
	}
	slices.SortStableFunc(w.Jobs, func(a, b Job) int { return cmpInt(a.Submit, b.Submit) })
	starts := map[int64]int64{}
	for i, r := range rows {
		starts[int64(i+1)] = r[2]
	}
	run := &Run{Records: newRecords(w), Converged: true}
	for i := range run.Records {
		rec := &run.Records[i]
		st := starts[w.Jobs[i].Number]
		rec.Starts, rec.End, rec.State = []int64{st}, st+rec.Run, Served
		run.Stop = max(run.Stop, rec.End)
	}
	return w, run
}

// schedule: two users, each with 6 one-GPU jobs of an hour, one job per
// user per hour over 6 hours, on 2 GPUs. delay postpones user 1's jobs.
func twoUsers(delay, shift int64, dup bool) (*Workload, *Run, Interval) {
	var rows [][5]int64
	for k := range int64(6) {
		for u := range int64(2) {
			s := shift + k*3600
			st := s
			if u == 1 {
				st += delay * (k + 1)
			}
			rows = append(rows, [5]int64{u, s, st, 3600, 1})
			if dup {
				rows = append(rows, [5]int64{u, s, st, 3600, 1})
			}
		}
	}
	pool := 2
	if dup {
		pool = 4
	}
	w, run := constructed(pool, 2, rows)
	return w, run, Interval{shift, shift + 2*86400}
}

// The fairness measures on constructed schedules (docs/studies.md §4.4):
// zero wait everywhere is perfectly fair; starving one user makes every
// measure worse; shifting every time or duplicating every job changes
// nothing.
func TestFairnessOnConstructedSchedules(t *testing.T) {
	w0, r0, iv := twoUsers(0, 0, false)
	s0, err := Measure(w0, r0, iv)
	if err != nil {
		t.Fatal(err)
	}
	if s0.NUWT.CV != 0 || s0.NUWT.Users != 2 || s0.All.MeanWait != 0 {
		t.Fatalf("zero wait: NUWT %+v, mean wait %v", s0.NUWT, s0.All.MeanWait)
	}
	// The share measure over the first 6 hours, as one "day" of the
	// control: both users busy throughout.
	six := Interval{0, 6 * 3600}
	ctl := fifoControl(w0, r0, six, 6*3600)
	if len(ctl.Days) != 1 || !slices.Equal(ctl.Days[0], []int32{0, 1}) {
		t.Fatalf("control %+v", ctl)
	}
	sh := sharesOver(w0, r0, ctl, 6*3600)
	if sh != 1 {
		t.Fatalf("zero wait: share Jain %v", sh)
	}
	// Starving user 1: its k-th job waits 20 min × (k + 1).
	w1, r1, _ := twoUsers(1200, 0, false)
	s1, err := Measure(w1, r1, iv)
	if err != nil {
		t.Fatal(err)
	}
	if !(s1.NUWT.CV > 0) || !(sharesOver(w1, r1, ctl, 6*3600) < 1) {
		t.Fatalf("starved: NUWT %+v share Jain %v", s1.NUWT, sharesOver(w1, r1, ctl, 6*3600))
	}
	// Shifted by 3 days and 17 s, and every job duplicated on twice the
	// pool: the same numbers.
	for _, c := range []struct {
		shift int64
		dup   bool
	}{{3*86400 + 17, false}, {0, true}, {86400, true}} {
		w2, r2, iv2 := twoUsers(1200, c.shift, c.dup)
		s2, err := Measure(w2, r2, iv2)
		if err != nil {
			t.Fatal(err)
		}
		ctl2 := ShareControl{Interval: Interval{c.shift, c.shift + 6*3600}, Days: [][]int32{{0, 1}}}
		if s2.NUWT != s1.NUWT || sharesOver(w2, r2, ctl2, 6*3600) != sharesOver(w1, r1, ctl, 6*3600) {
			t.Fatalf("shift %d dup %v: NUWT %+v share %v; unshifted %+v %v", c.shift, c.dup, s2.NUWT, sharesOver(w2, r2, ctl2, 6*3600), s1.NUWT, sharesOver(w1, r1, ctl, 6*3600))
		}
	}
}

// sharesOver is the share measure with a control of one period of length
// span (the day of Shares, shortened for a constructed schedule).
func sharesOver(w *Workload, run *Run, ctl ShareControl, span int64) float64 {
	ctl.Length = span
	return Shares(w, run, ctl).Jain
}

// Fair start times on a replay: under fifo on a light load nobody waits and
// nobody is late; under priority, a standby job that later interactive
// jobs overtake is late; shifting every submit changes nothing.
func TestFairStartStarvedAndShifted(t *testing.T) {
	// Pool 2. User 0's interactive jobs, one GPU each, arrive every 50 s
	// from 10 s on and run 100 s; user 1's standby job (2 GPUs, 10 s)
	// arrives at 0 behind a running job.
	rows := [][4]int64{{0, 30, 30, 1}}
	for k := range int64(6) {
		rows = append(rows, [4]int64{10 + 50*k, 100, 100, 1})
	}
	rows = append(rows, [4]int64{5, 10, 10, 2})
	build := func(shift int64) *Workload {
		w := small(2)
		w.Campaigns = []Campaign{{Name: "user 0", Share: 0.5}, {Name: "user 1", ID: 1, Share: 0.5}}
		w.Groups = []Group{{Members: []int{0, 1}, Share: 1}}
		for i, r := range rows {
			j := Job{Number: int64(i + 1), Submit: r[0] + shift, Run: r[1], Estimate: r[2], GPUs: int(r[3]), Class: policy.Interactive, LogWait: -1}
			if i == len(rows)-1 {
				j.Campaign, j.User, j.Class = 1, 1, policy.Opportunistic
			}
			w.Jobs = append(w.Jobs, j)
		}
		slices.SortStableFunc(w.Jobs, func(a, b Job) int { return cmpInt(a.Submit, b.Submit) })
		return w
	}
	w := build(0)
	sample := []int{0, 1, 2, 3, 4, 5, 6, 7}
	late := func(w *Workload, name string) FairStartStats {
		run := replayPolicy(t, w, name, policies.TraceKnobs(), ReplayOptions{FairStart: sample})
		return FairStarts(run, sample, run.FairStart, 0)
	}
	fifo, prio := late(w, "fifo"), late(w, "priority")
	if fifo.Late != 0 || !(prio.Late > 0) || !(prio.LateFrac > fifo.LateFrac) {
		t.Fatalf("fifo %+v, priority %+v", fifo, prio)
	}
	if shifted := late(build(86400*5+3), "priority"); fmt.Sprintf("%+v", shifted) != fmt.Sprintf("%+v", prio) {
		t.Fatalf("shifted %+v, unshifted %+v", shifted, prio)
	}
	// Nobody waits on an idle machine: every fair start is the submit.
	light := small(8, [4]int64{0, 10, 10, 1}, [4]int64{1, 10, 10, 2}, [4]int64{2, 10, 10, 4})
	run := ReplayExactFair(light, []int{0, 1, 2}, 0)
	if s := FairStarts(run, []int{0, 1, 2}, run.FairStart, 0); s.Late != 0 || s.N != 3 || s.LateFrac != 0 {
		t.Fatalf("light load: %+v", s)
	}
}

func TestFairSampleIsSeeded(t *testing.T) {
	w := loadExcerpt(t, Options{})
	from, until := w.SubmitSpan()
	iv, _ := MeasureInterval(from, until, DefaultWarmup, DefaultCooldown)
	a, b := FairSample(w, iv, 100, 7), FairSample(w, iv, 100, 7)
	c := FairSample(w, iv, 100, 8)
	if !slices.Equal(a, b) || slices.Equal(a, c) || len(a) != 100 || !slices.IsSorted(a) {
		t.Fatalf("samples %v %v %v", a, b, c)
	}
	for _, j := range a {
		if !iv.Contains(w.Jobs[j].Submit) {
			t.Fatalf("job %d outside the interval", j)
		}
	}
}

// The two forks agree: the exact replay's (a copy of its queue and leases)
// and the fifo policy's (a deep copy of the allocator), on random traces
// with every job sampled; and the exact replay's records do not move when
// fair starts are taken.
func TestExactFairStartsMatchFifoFork(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		w := randomTrace(t)
		for i := range w.Jobs {
			w.Jobs[i].Class = policy.AgentBurst
		}
		sample := make([]int, len(w.Jobs))
		for i := range sample {
			sample[i] = i
		}
		exact := ReplayExactFair(w, sample, 0)
		pr := replayPolicy(t, w, "fifo", policies.TraceKnobs(), ReplayOptions{FairStart: sample, Horizon: 1 << 30})
		if !slices.Equal(exact.FairStart, pr.FairStart) {
			t.Fatalf("fair starts: exact %v, fifo %v", exact.FairStart, pr.FairStart)
		}
		if plain := ReplayExact(w); !reflect.DeepEqual(plain.Records, exact.Records) {
			t.Fatal("taking fair starts moved the exact replay")
		}
		for k, j := range sample {
			if exact.FairStart[k] < w.Jobs[j].Submit {
				t.Fatalf("job %d: fair start %d before its submit %d", j, exact.FairStart[k], w.Jobs[j].Submit)
			}
		}
	})
}

// The control set against a second-by-second reading of the records: a
// campaign is in a day's set exactly when it had demand (work queued or
// running) at every second of that day, on random replays with short days.
func TestFifoControlMatchesSecondBySecond(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		w := randomTrace(t)
		name := rapid.SampledFrom([]string{"fifo", "budget", "static"}).Draw(t, "policy")
		run := replayPolicy(t, w, name, policies.TraceKnobs(), ReplayOptions{Horizon: rapid.Int64Range(1, 3000).Draw(t, "horizon")})
		day := rapid.Int64Range(1, 600).Draw(t, "day")
		from := rapid.Int64Range(w.Jobs[0].Submit-50, run.Stop).Draw(t, "from")
		iv := Interval{from, from + rapid.Int64Range(day, 8*day).Draw(t, "span")}
		ctl := fifoControl(w, run, iv, day)
		if len(ctl.Days) != int(iv.Span()/day) {
			t.Fatalf("%d days of %d s in %d s", len(ctl.Days), day, iv.Span())
		}
		for d := range ctl.Days {
			var want []int32
			for c := range w.Campaigns {
				busy := true
				for u := iv.From + int64(d)*day; u < iv.From+int64(d+1)*day && busy; u++ {
					has := false
					for i := range run.Records {
						r := &run.Records[i]
						end := run.Stop
						switch {
						case r.State == Served:
							end = r.End
						case r.State == Denied && len(r.Aborted()) > 0:
							end = r.Aborted()[len(r.Aborted())-1]
						case r.State == Denied:
							continue
						}
						if w.Jobs[i].Campaign == c && r.Submit <= u && u < end {
							has = true
							break
						}
					}
					busy = has
				}
				if busy {
					want = append(want, int32(c))
				}
			}
			if !slices.Equal(ctl.Days[d], want) {
				t.Fatalf("day %d: control %v, second by second %v", d, ctl.Days[d], want)
			}
		}
	})
}
