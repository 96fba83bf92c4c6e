package trace

import (
	"reflect"
	"testing"

	"pgregory.net/rapid"

	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/policies"
	"github.com/bursar-hpc/bursar/policy/static"
)

// randomGroupedTrace is randomTrace with its campaigns in up to four
// groups, so that static cuts several partitions, each a queue a fork
// shares with the replay until either writes it.
func randomGroupedTrace(t *rapid.T) *Workload {
	w := randomTrace(t)
	ng := rapid.IntRange(1, min(4, len(w.Campaigns))).Draw(t, "groups")
	w.Groups = make([]Group, ng)
	for g := range w.Groups {
		w.Groups[g] = Group{ID: g, Share: float64(g+1) / float64(ng*(ng+1)/2)}
	}
	for c := range w.Campaigns {
		g := c % ng // every group has a member
		if c >= ng {
			g = rapid.IntRange(0, ng-1).Draw(t, "group")
		}
		w.Groups[g].Members = append(w.Groups[g].Members, c)
	}
	return w
}

// The fair starts of static's forks, which share the partitions' queues
// with the replay until either writes them, against their definition
// replayed from scratch, on traces whose groups own several partitions.
func TestPartitionedForksMatchReplayFromScratch(t *testing.T) {
	for _, name := range []string{"static", "static-share"} {
		t.Run(name, func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) { fairStartsFromScratch(t, randomGroupedTrace(t), name) })
		})
	}
}

// The same for static under lend scavenger, whose forks lend idle GPUs,
// plan, reclaim with notices and requeue the jobs preempted (a third of
// the draws preempt): a pass there may leave its partition astir, and
// the forks keep every tick after a change (static.Rule.Settled is false).
func TestScavengerForksMatchReplayFromScratch(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		knobs := policies.TraceKnobs()
		static.Slot.Edit(&knobs).Lend = static.LendScavenger
		fairStartsFromScratchKnobs(t, randomGroupedTrace(t), "static", knobs)
	})
}

// A replay with fair starts for every job (a fork at every submit, run
// ahead at once or later, sharing what it can with the replay until
// written) leaves the replay itself as it is without them, job for job:
// no fork writes into what the replay goes on with.
func TestForksLeaveTheReplayAlone(t *testing.T) {
	for _, name := range forkedPolicies {
		t.Run(name, func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				w := randomGroupedTrace(t)
				if name == "bursar" {
					w.BucketHours = DefaultBucketHours
				}
				knobs := policies.TraceKnobs()
				plain := replayPolicy(t, w, name, knobs, ReplayOptions{Horizon: 20000})
				forked := replayPolicy(t, w, name, knobs, everyJobForked(t, w, 20000))
				if !reflect.DeepEqual(plain.Records, forked.Records) || !reflect.DeepEqual(plain.Start, forked.Start) {
					t.Fatalf("the replay with forks differs from the one without:\n%+v\n%+v", forked.Records, plain.Records)
				}
			})
		})
	}
}

// randomCongestedTrace is a log that keeps one partition's queue long
// (static cuts one: a single group): dozens of jobs submitted faster
// than they run, most narrow and a few wide, estimates well over the
// runs, so that a fork's passes find the same blocked head pass after
// pass while leases end early, free GPUs and the reservation's extra
// GPUs rising and falling between them (static.Rule.FirstGrants'
// searches that start where the last one found its first job).
func randomCongestedTrace(t *rapid.T) *Workload {
	pool := rapid.IntRange(4, 16).Draw(t, "pool")
	n := rapid.IntRange(20, 80).Draw(t, "jobs")
	w := &Workload{Pool: pool, Campaigns: []Campaign{{ID: 0, Name: "user 0", Share: 1}},
		Groups: []Group{{ID: 0, Share: 1, Members: []int{0}}}}
	var submit int64
	for i := range n {
		submit += rapid.Int64Range(0, 60).Draw(t, "gap")
		run := rapid.Int64Range(1, 600).Draw(t, "run")
		gpus := rapid.IntRange(1, max(1, pool/4)).Draw(t, "narrow")
		if rapid.IntRange(0, 3).Draw(t, "wide?") == 0 {
			gpus = rapid.IntRange(pool/2, pool).Draw(t, "wide")
		}
		w.Jobs = append(w.Jobs, Job{
			Number: int64(i + 1), Submit: submit, Run: run,
			Estimate: run + rapid.Int64Range(0, 1200).Draw(t, "over"),
			GPUs:     gpus, Campaign: 0, User: 0, Queue: -1, Class: policy.AgentBurst, LogWait: -1,
		})
	}
	return w
}

// Fair starts against the jobs replayed from scratch on logs whose one
// partition's queue stays long (randomCongestedTrace).
func TestCongestedForksMatchReplayFromScratch(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) { fairStartsFromScratch(t, randomCongestedTrace(t), "static") })
}
