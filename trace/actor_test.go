package trace

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/policies"
	"github.com/bursar-hpc/bursar/policy/priority"
)

// watcher is an Actor that acts at the ticks from … to and checks when
// the driver calls it: it joins once, after the workload's campaigns and
// before any job is filed; it is stepped at every executed tick, just
// before the policy's Tick (Act, the clock at t − 1) and just after it
// (Acted, the clock at t).
type watcher struct {
	alloc       policy.Allocator
	campaigns   int
	from, to    int
	budget      float64 // the workload campaigns' budget; 0: theirs
	wide        int     // the jobs wider than this are denied; 0: none
	joins       int
	acts, acted []int
	denied      []int64 // the denied jobs' numbers
	err         error
}

func (a *watcher) fail(format string, args ...any) {
	if a.err == nil {
		a.err = fmt.Errorf(format, args...)
	}
}

func (a *watcher) Envelope(env policy.Envelope) policy.Envelope {
	if a.joins > 0 {
		a.fail("Envelope after Join")
	}
	if a.budget > 0 {
		env.Budget = a.budget
	}
	return env
}

func (a *watcher) Join(alloc policy.Allocator) error {
	a.joins++
	if n := alloc.NumCampaigns(); n != a.campaigns {
		a.fail("joined with %d campaigns registered, want the workload's %d", n, a.campaigns)
	}
	for c := range a.campaigns {
		if alloc.Outstanding(policy.CampaignID(c), policy.AnyClass) != 0 {
			a.fail("joined after a job was filed")
		}
	}
	a.alloc = alloc
	return nil
}

func (a *watcher) Denies(jb *Job) bool {
	if a.joins == 0 {
		a.fail("asked about job %d before Join", jb.Number)
	}
	if a.wide > 0 && jb.GPUs > a.wide {
		a.denied = append(a.denied, jb.Number)
		return true
	}
	return false
}

func (a *watcher) Act(t int) {
	if now := a.alloc.Now(); now != t-1 || len(a.acts) != len(a.acted) {
		a.fail("Act(%d) at clock %d after %d acts, %d acted", t, now, len(a.acts), len(a.acted))
	}
	a.acts = append(a.acts, t)
}

func (a *watcher) Acted(t int) error {
	if now := a.alloc.Now(); now != t || len(a.acts) == 0 || a.acts[len(a.acts)-1] != t {
		a.fail("Acted(%d) at clock %d after acts %v", t, now, a.acts)
	}
	a.acted = append(a.acted, t)
	return nil
}

func (a *watcher) NextAct(now int) int {
	switch {
	case now+1 < a.from:
		return a.from
	case now+1 <= a.to:
		return now + 1
	}
	return math.MaxInt
}

// An actor that only watches changes nothing of a replay (the same
// journal and starts as without it), is stepped around every executed
// tick and at every tick it asked for (none of them skipped), and joins
// once, between the workload's campaigns and the first job.
func TestActorIsSteppedAtItsTicks(t *testing.T) {
	for _, name := range forkedPolicies {
		t.Run(name, func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				w, _ := randomForkTrace(t, name)
				knobs := policies.TraceKnobs()
				var plain, watched journal
				want := replayPolicy(t, w, name, knobs, ReplayOptions{Recorder: &plain, Horizon: 3000})
				span := int(w.Jobs[len(w.Jobs)-1].Submit-w.Jobs[0].Submit) + 1000
				from := rapid.IntRange(1, span).Draw(t, "from")
				a := &watcher{campaigns: len(w.Campaigns), from: from, to: from + rapid.IntRange(0, 300).Draw(t, "stay")}
				got := replayPolicy(t, w, name, knobs, ReplayOptions{Recorder: &watched, Horizon: 3000, Actor: a})
				if a.err != nil {
					t.Fatal(a.err)
				}
				if !bytes.Equal(plain.buf, watched.buf) || !slices.Equal(want.Start, got.Start) {
					t.Fatalf("a watching actor changed the replay:\n%s\nagainst\n%s", watched.buf, plain.buf)
				}
				if a.joins != 1 {
					t.Fatalf("%d joins", a.joins)
				}
				if int64(len(a.acts)) != got.Ticks || !slices.Equal(a.acts, a.acted) {
					t.Fatalf("%d ticks, acts %v, acted %v", got.Ticks, a.acts, a.acted)
				}
				last := 0 // the last tick executed
				if len(a.acts) > 0 {
					last = a.acts[len(a.acts)-1]
				}
				for tick := a.from; tick <= min(a.to, last); tick++ {
					if _, ok := slices.BinarySearch(a.acts, tick); !ok {
						t.Fatalf("tick %d skipped while the actor acts (%d … %d); stepped %v", tick, a.from, a.to, a.acts)
					}
				}
			})
		})
	}
}

// By hand: the actor's envelopes are the ones registered, and the jobs it
// denies never reach the policy and count as denied. Pool 4, jobs of 1, 3
// and 2 GPUs; the actor denies the jobs wider than 2.
func TestActorEnvelopesAndDenials(t *testing.T) {
	w := &Workload{Pool: 4, Campaigns: []Campaign{{Name: "u1", Share: 0.5}, {Name: "u2", Share: 0.5}}, Jobs: []Job{
		{Number: 1, Submit: 0, Run: 100, Estimate: 100, GPUs: 1, Campaign: 0, Queue: -1},
		{Number: 2, Submit: 10, Run: 100, Estimate: 100, GPUs: 3, Campaign: 1, Queue: -1},
		{Number: 3, Submit: 20, Run: 100, Estimate: 100, GPUs: 2, Campaign: 1, Queue: -1},
	}}
	alloc, err := policies.New("fifo", policy.DefaultConfig(w.Pool), policies.TraceKnobs())
	if err != nil {
		t.Fatal(err)
	}
	var j journal
	a := &watcher{campaigns: 2, from: math.MaxInt - 1, to: math.MaxInt - 1, budget: 12345, wide: 2}
	run, err := Replay(w, alloc, ReplayOptions{Recorder: &j, Actor: a})
	if err != nil {
		t.Fatal(err)
	}
	if a.err != nil {
		t.Fatal(a.err)
	}
	for c := range 2 {
		if b := alloc.Envelope(policy.CampaignID(c)).Budget; b != 12345 {
			t.Errorf("campaign %d registered with budget %g, want the actor's 12345", c, b)
		}
	}
	if !slices.Equal(a.denied, []int64{2}) || run.Unserved != 1 || !slices.Equal(run.Denied, []bool{false, true, false}) ||
		run.Records[1].State != Denied {
		t.Errorf("denied %v, unserved %d, %v, state %v: want job 2 alone", a.denied, run.Unserved, run.Denied, run.Records[1].State)
	}
	if !slices.Equal(run.Start, []int64{0, -1, 20}) {
		t.Errorf("starts %v, want [0 -1 20]", run.Start)
	}
	if n := bytes.Count(j.buf, []byte("\n")); n == 0 || bytes.Contains(j.buf, []byte(`"gpus":3`)) {
		t.Errorf("the policy saw the denied job:\n%s", j.buf)
	}
	fresh, err := policies.New("fifo", policy.DefaultConfig(w.Pool), policies.TraceKnobs())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Replay(w, fresh, ReplayOptions{Actor: &watcher{campaigns: 2}, FairStart: []int{0}}); err == nil {
		t.Error("fair starts with an actor: no error")
	}
}

// declarer is a watcher that speaks for the users too (Users): it
// declares the jobs in top deadline and records the ids and starts.
type declarer struct {
	watcher
	top    []int64
	ids    []policy.CampaignID
	starts map[int64][]int64
}

func (d *declarer) Registered(ids []policy.CampaignID) { d.ids = slices.Clone(ids) }

func (d *declarer) Declare(jb *Job) policy.Class {
	if slices.Contains(d.top, jb.Number) {
		return policy.Deadline
	}
	return jb.Class
}

func (d *declarer) Started(jb *Job, t int64) { d.starts[jb.Number] = append(d.starts[jb.Number], t) }

// By hand: under priority without preemption on a pool of 4, three jobs
// of 4 GPUs for 100 s submitted at 0, 10 and 20 start at 0, 100 and 200
// as filed; when the users declare job 3 deadline (the interactive tier)
// it starts at 100, before job 2 (at 200). The users hear every start
// and the campaigns' ids.
func TestUsersDeclareTheClassTheyFile(t *testing.T) {
	w := &Workload{Pool: 4, Campaigns: []Campaign{{Name: "u1", Share: 0.5}, {Name: "u2", Share: 0.5}}, Jobs: []Job{
		{Number: 1, Submit: 1, Run: 100, Estimate: 100, GPUs: 4, Campaign: 0, Class: policy.AgentBurst, Queue: -1},
		{Number: 2, Submit: 10, Run: 100, Estimate: 100, GPUs: 4, Campaign: 1, Class: policy.AgentBurst, Queue: -1},
		{Number: 3, Submit: 20, Run: 100, Estimate: 100, GPUs: 4, Campaign: 1, Class: policy.AgentBurst, Queue: -1},
	}}
	for _, tc := range []struct {
		top  []int64
		want []int64
	}{{nil, []int64{1, 101, 201}}, {[]int64{3}, []int64{1, 201, 101}}} {
		knobs := policies.TraceKnobs()
		off := false
		priority.Slot.Edit(&knobs).Preempt = &off
		alloc, err := policies.New("priority", policy.DefaultConfig(w.Pool), knobs)
		if err != nil {
			t.Fatal(err)
		}
		d := &declarer{watcher: watcher{campaigns: 2, from: math.MaxInt - 1, to: math.MaxInt - 1}, top: tc.top, starts: map[int64][]int64{}}
		run, err := Replay(w, alloc, ReplayOptions{Actor: d})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(run.Start, tc.want) {
			t.Errorf("top %v: starts %v, want %v", tc.top, run.Start, tc.want)
		}
		for j, s := range tc.want {
			if got := d.starts[int64(j+1)]; !slices.Equal(got, []int64{s}) {
				t.Errorf("top %v: job %d heard started at %v, want [%d]", tc.top, j+1, got, s)
			}
		}
		if !slices.Equal(d.ids, []policy.CampaignID{0, 1}) {
			t.Errorf("ids %v", d.ids)
		}
	}
}
