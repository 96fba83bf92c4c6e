package trace

import (
	"bytes"
	"testing"

	"github.com/bursar-hpc/bursar/internal/testlong"
	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/baseline"
	"github.com/bursar-hpc/bursar/policy/budget"
	"github.com/bursar-hpc/bursar/policy/policies"
	"pgregory.net/rapid"
)

// forkedPolicies are the policies whose replays the fork tests copy:
// every one a trace can be replayed under.
var forkedPolicies = []string{"bursar", "fifo", "priority", "static", "fairshare", "quota", "budget", "slurm"}

// randomForkTrace draws a random trace for policy name (Bursar's on the
// hours bucket, so that its rigid jobs fit) and the job after whose
// filing the fork is taken.
func randomForkTrace(t *rapid.T, name string) (*Workload, int) {
	w := randomTrace(t)
	if name == "bursar" {
		w.BucketHours = DefaultBucketHours
	}
	return w, rapid.IntRange(0, len(w.Jobs)-1).Draw(t, "fork after job")
}

// drawRestart draws budget's restart rule: from zero, or from checkpoints
// short enough for the random traces' runs (≤ 900 s) to keep some, so
// that a fork resumes a job from the replay's checkpoints and its own.
func drawRestart(t *rapid.T) baseline.Restart {
	return baseline.Restart{Checkpoint: rapid.SampledFrom([]int{0, 60, 3600}).Draw(t, "checkpoint")}
}

// A copy of any policy's state, taken mid-replay and run on with every
// arrival, writes exactly the journal the original writes from that point,
// and taking it changes nothing of the original's: the copy shares no
// state with the original (no pointer, slice, map or cached closure
// aliases it). This is what makes the fair start times' forks sound.
func TestForkContinuesLikeTheOriginal(t *testing.T) {
	testlong.Skip(t, "forks replayed on against the whole run")
	for _, name := range forkedPolicies {
		t.Run(name, func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				w, at := randomForkTrace(t, name)
				// A copy read only for its grants may stop keeping its
				// books (baseline.Core.GrantsOnly): its journal must not
				// change either.
				grantsOnly := rapid.Bool().Draw(t, "grants only")
				knobs := policies.TraceKnobs()
				budget.Slot.Edit(&knobs).MinRuntime = [4]int{0, 0, 60, 0}
				budget.Slot.Edit(&knobs).Restart = drawRestart(t)
				var plain, main, fork journal
				replayPolicy(t, w, name, knobs, ReplayOptions{Recorder: &plain, Horizon: 3000})
				forked, mark := false, 0
				opt := ReplayOptions{Recorder: &main, Horizon: 3000, forkHook: func(fs forkState, alloc policy.Allocator, cap *capture) error {
					if forked || fs.next <= at {
						return nil
					}
					forked, mark = true, len(main.buf)
					c, err := CloneAllocator(alloc)
					alloc.SetRecorder(cap)
					if err != nil {
						return err
					}
					fs.grantsOnly = grantsOnly
					_, err = fs.run(c, len(w.Jobs), 0, &fork, nil, nil)
					return err
				}}
				replayPolicy(t, w, name, knobs, opt)
				if !bytes.Equal(plain.buf, main.buf) {
					t.Fatalf("taking a copy changed the original's journal")
				}
				if !forked {
					t.Fatalf("no fork after job %d", at)
				}
				if !bytes.Equal(main.buf[mark:], fork.buf) {
					t.Fatalf("after job %d, the original:\n%s\nthe copy:\n%s", at, main.buf[mark:], fork.buf)
				}
			})
		})
	}
}

// The fair start times against their definition, replayed from scratch:
// for each job, the same policy on the jobs submitted up to its submit
// time alone (docs/studies.md §6.17). Replay reports the fair start where
// it is earlier than the job's first start, else the first start; every
// policy, random traces, every job sampled. A copy runs ahead at once as
// far as its books allow, or as far as the draw lets it (its jobs not
// all granted by then, it waits for their starts in the replay as a new
// copy), or not at all.
func TestFairStartsMatchReplayFromScratch(t *testing.T) {
	for _, name := range []string{"fifo", "priority", "static", "fairshare", "quota", "budget"} {
		t.Run(name, func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) { fairStartsFromScratch(t, randomTrace(t), name) })
		})
	}
}

// fairStartsFromScratch checks every job's fair start in a replay of w
// under policy name against w's jobs submitted up to its submit time
// replayed alone (TestFairStartsMatchReplayFromScratch).
func fairStartsFromScratch(t *rapid.T, w *Workload, name string) {
	knobs := policies.TraceKnobs()
	budget.Slot.Edit(&knobs).Restart = drawRestart(t)
	fairStartsFromScratchKnobs(t, w, name, knobs)
}

// fairStartsFromScratchKnobs is fairStartsFromScratch at the given knobs.
func fairStartsFromScratchKnobs(t *rapid.T, w *Workload, name string, knobs policies.Knobs) {
	const horizon = 20000
	opt := everyJobForked(t, w, horizon)
	run := replayPolicy(t, w, name, knobs, opt)
	for k, j := range opt.FairStart {
		// The jobs submitted up to j's submit time.
		m := j + 1
		for m < len(w.Jobs) && w.Jobs[m].Submit == w.Jobs[j].Submit {
			m++
		}
		sub := *w
		sub.Jobs = w.Jobs[:m]
		// The same horizon tick as the whole replay's.
		h := w.Jobs[len(w.Jobs)-1].Submit + horizon - w.Jobs[m-1].Submit
		alone := replayPolicy(t, &sub, name, knobs, ReplayOptions{Horizon: h})
		fair := int64(-1)
		if st := alone.Records[j].Starts; len(st) > 0 {
			fair = st[0]
		}
		want := fair
		if st := run.Records[j].Starts; len(st) > 0 && (fair < 0 || fair >= st[0]) {
			want = st[0]
		}
		if run.Denied[j] {
			want = -1
		}
		if run.FairStart[k] != want {
			t.Fatalf("job %d: fair start %d, from scratch %d (first start %v)", j, run.FairStart[k], fair, run.Records[j].Starts)
		}
	}
}

// everyJobForked are replay options with every job of w sampled for a
// fair start, to the horizon, its copies run ahead at once as far as
// their books allow, or as far as the draw lets them (their jobs not all
// granted by then, they wait for their starts in the replay as new
// copies), or not at all.
func everyJobForked(t *rapid.T, w *Workload, horizon int64) ReplayOptions {
	sample := make([]int, len(w.Jobs))
	for i := range sample {
		sample[i] = i
	}
	opt := ReplayOptions{FairStart: sample, Horizon: horizon}
	switch rapid.IntRange(0, 2).Draw(t, "run ahead") {
	case 0: // as far as the books allow
	case 1:
		opt.aheadReach = func(now, reach int) int { return now }
	case 2:
		ahead := rapid.IntRange(1, 3000).Draw(t, "ahead")
		opt.aheadReach = func(now, reach int) int { return min(reach, now+ahead) }
	}
	return opt
}
