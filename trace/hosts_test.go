package trace

import (
	"bytes"
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/bursar-hpc/bursar/hosts"
	"github.com/bursar-hpc/bursar/platform"
	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/baseline"
	"github.com/bursar-hpc/bursar/policy/policies"
)

// twoNodes is a platform of two nodes of 4 GPUs, and a workload of two
// 4-GPU jobs submitted at second 0 (tick 1): job 1 of run1 seconds, seated
// on node 0 (the best fit's lowest index), job 2 of 20000 s on node 1.
func twoNodes(run1 int64) (*Workload, platform.Spec) {
	w := &Workload{Pool: 8, Campaigns: []Campaign{{Name: "lab", Share: 1}}, Jobs: []Job{
		{Number: 1, Submit: 0, Run: run1, Estimate: run1, GPUs: 4, Queue: -1},
		{Number: 2, Submit: 0, Run: 20000, Estimate: 20000, GPUs: 4, Queue: -1},
	}}
	return w, platform.Spec{Nodes: 2, GPUsPerNode: 4}
}

func replayHosts(t *testing.T, w *Workload, spec platform.Spec, cfg hosts.Config, restart int, plan ...hosts.Planned) *Run {
	t.Helper()
	return replayHostsUnder(t, "fifo", false, w, spec, cfg, restart, plan...)
}

// replayHostsUnder is replayHosts under policy name, skipping quiet ticks
// or stepping every tick.
func replayHostsUnder(t *testing.T, name string, tickByTick bool, w *Workload, spec platform.Spec, cfg hosts.Config, restart int, plan ...hosts.Planned) *Run {
	t.Helper()
	h, err := hosts.Scripted(cfg, spec.Nodes, plan)
	if err != nil {
		t.Fatal(err)
	}
	a, err := policies.New(name, policy.DefaultConfig(w.Pool), policies.TraceKnobs())
	if err != nil {
		t.Fatal(err)
	}
	if restart > 0 {
		a.(interface{ SetRestart(baseline.Restart) }).SetRestart(baseline.Restart{Checkpoint: restart})
	}
	run, err := Replay(w, a, ReplayOptions{Platform: spec, Hosts: h, TickByTick: tickByTick})
	if err != nil {
		t.Fatal(err)
	}
	return run
}

func drainRule(contract bool) hosts.Config {
	cfg := hosts.Default()
	cfg.Contract, cfg.MinRuntime, cfg.Threshold = contract, 7200, 28800
	return cfg
}

// By hand, under the contract (m = 2 h): node 0 degrades at tick 10001
// (second 10000), when job 1 has run 10000 s, past m: it is requeued at
// once, with no human, and the node is empty — a drain of 0 s; its repair
// (600 s) ends at tick 10601 and job 1 starts again there at the next
// tick, 10602 (second 10601), from zero: 4 × 10000 GPU-seconds lost, its
// end at second 10601 + 20000.
func TestReplayContractRequeuesPastMinimumRuntime(t *testing.T) {
	w, spec := twoNodes(20000)
	run := replayHosts(t, w, spec, drainRule(true), 0, hosts.Planned{Node: 0, At: 10001, Repair: 600})
	r := run.Records[0]
	if !slices.Equal(r.Starts, []int64{0, 10601}) || !slices.Equal(r.Aborted(), []int64{10000}) || r.End != 30601 ||
		r.HostEnded != 1 || r.Preemptions != 0 || r.LostGPUSeconds != 40000 {
		t.Fatalf("job 1: starts %v aborted %v end %d, host-ended %d, preempted %d, lost %d", r.Starts, r.Aborted(), r.End, r.HostEnded, r.Preemptions, r.LostGPUSeconds)
	}
	if want := (hosts.Tally{Degradations: 1, Drains: 1, ContractRequeues: 1}); run.Hosts != want {
		t.Fatalf("tally %+v, want %+v", run.Hosts, want)
	}
	if run.HostEnded != 1 || run.HostLostGPUSeconds != 40000 || run.Preemptions != 0 || run.Records[1].End != 20000 {
		t.Fatalf("run: host-ended %d, lost %d, preemptions %d; job 2 ends %d", run.HostEnded, run.HostLostGPUSeconds, run.Preemptions, run.Records[1].End)
	}
}

// By hand, without the contract (threshold 8 h): job 1 (run 50000 s) is
// still on node 0, degraded at tick 10001, at tick 10001 + 28800 = 38801:
// a human ends it, one intervention, a drain of 28800 s. Node 1 is free
// since job 2 ended (second 20000), so job 1 starts again at tick 38802
// (second 38801) and runs its 50000 s from zero.
func TestReplayThresholdCountsAnIntervention(t *testing.T) {
	w, spec := twoNodes(50000)
	run := replayHosts(t, w, spec, drainRule(false), 0, hosts.Planned{Node: 0, At: 10001, Repair: 600})
	r := run.Records[0]
	if !slices.Equal(r.Starts, []int64{0, 38801}) || !slices.Equal(r.Aborted(), []int64{38800}) || r.End != 88801 || r.LostGPUSeconds != 4*38800 {
		t.Fatalf("job 1: starts %v aborted %v end %d lost %d", r.Starts, r.Aborted(), r.End, r.LostGPUSeconds)
	}
	if want := (hosts.Tally{Degradations: 1, Drains: 1, DrainSeconds: 28800, Interventions: 1}); run.Hosts != want {
		t.Fatalf("tally %+v, want %+v", run.Hosts, want)
	}
}

// By hand: node 1 fails at tick 5001 (second 5000) under job 2, which
// stops at once (no intervention, contract or not) and, with hourly
// checkpoints, keeps 3600 s of its 5000: 4 × 1400 GPU-seconds lost. The
// repair (1000 s) returns node 1 at tick 6001; job 2 starts again at
// tick 6002 (second 6001) for its last 16400 s.
func TestReplayFailureEndsTheNodesJobs(t *testing.T) {
	w, spec := twoNodes(20000)
	run := replayHosts(t, w, spec, drainRule(true), 3600, hosts.Planned{Node: 1, At: 5001, Fail: true, Repair: 1000})
	r := run.Records[1]
	if !slices.Equal(r.Starts, []int64{0, 6001}) || !slices.Equal(r.Aborted(), []int64{5000}) || !slices.Equal(r.Kept(), []int64{3600}) ||
		r.End != 6001+16400 || r.LostGPUSeconds != 4*1400 {
		t.Fatalf("job 2: starts %v aborted %v kept %v end %d lost %d", r.Starts, r.Aborted(), r.Kept(), r.End, r.LostGPUSeconds)
	}
	if want := (hosts.Tally{Failures: 1, FailedLeases: 1}); run.Hosts != want {
		t.Fatalf("tally %+v, want %+v", run.Hosts, want)
	}
	if run.Records[0].End != 20000 || run.Records[0].HostEnded != 0 {
		t.Fatalf("job 1 on node 0 was touched: %+v", run.Records[0])
	}
}

// By hand, under static on 2 nodes × 4 GPUs (one partition of all 8):
// job A (2 GPUs, 3000 s) starts at tick 1 on node 0; node 1 fails at tick
// 10 with nothing on it, for 5000 s (up again at tick 5010). At tick 101
// H (4 GPUs, 2000 s), D (6 GPUs, 1000 s) and C (2 GPUs, 5000 s) arrive: H
// fits the partition's 6 free GPUs but no up node, so it is planned, as if
// started now (ending at now + 2000); D, 6 GPUs, blocks in the 2 left, and
// EASY reserves for it. While now + 2000 < 3001 (A's end) the shadow time
// is H's end, where exactly D's 6 GPUs are free (extra 0): C, too long to
// end by then, is refused. From tick 1001, now + 2000 reaches A's end and
// both have ended at the shadow time (8 free, extra 2): C backfills into
// the extra, on node 0, at tick 1001 (second 1000). Nothing ends, arrives
// or returns at tick 1001: only the clock moved the planned job's end, so
// static is not steady while it plans one (Rule.NextEvent); skipping from
// tick 101 to A's end, as it did before, started H on node 0 at second
// 3000, C at 5000 and D at 5010. As worked: A ends at tick 3001, H waits
// for node 1 and starts at tick 5011 (second 5010), and D once C (tick
// 6001) and H (tick 7011) have ended, at second 7010.
func TestReplayStaticBackfillsAsItsPlannedJobAges(t *testing.T) {
	w := &Workload{Pool: 8, Campaigns: []Campaign{{Name: "lab", Share: 1}}, Jobs: []Job{
		{Number: 1, Submit: 0, Run: 3000, Estimate: 3000, GPUs: 2, Queue: -1},
		{Number: 2, Submit: 100, Run: 2000, Estimate: 2000, GPUs: 4, Queue: -1},
		{Number: 3, Submit: 100, Run: 1000, Estimate: 1000, GPUs: 6, Queue: -1},
		{Number: 4, Submit: 100, Run: 5000, Estimate: 5000, GPUs: 2, Queue: -1},
	}}
	spec := platform.Spec{Nodes: 2, GPUsPerNode: 4}
	fail := hosts.Planned{Node: 1, At: 10, Fail: true, Repair: 5000}
	want := []int64{0, 5010, 7010, 1000}
	for _, tickByTick := range []bool{true, false} {
		run := replayHostsUnder(t, "static", tickByTick, w, spec, drainRule(true), 0, fail)
		if !slices.Equal(run.Start, want) {
			t.Errorf("tick by tick %v: starts %v, want %v", tickByTick, run.Start, want)
		}
		if want := (hosts.Tally{Failures: 1}); run.Hosts != want {
			t.Errorf("tick by tick %v: tally %+v, want %+v", tickByTick, run.Hosts, want)
		}
	}
}

// seatWatch checks, at every grant of a replay on nodes with hosts, that
// the lease is seated on up nodes only and that no down node holds a
// lease.
type seatWatch struct {
	journal
	alloc  policy.Allocator
	placer *platform.Placer
	err    error
}

func (s *seatWatch) Record(e policy.Event) {
	s.journal.Record(e)
	if e.Kind != policy.EventGrant || s.err != nil {
		return
	}
	if s.placer == nil {
		s.placer = s.alloc.(policy.Placed).Placer()
	}
	seat, _ := s.placer.SeatOf(e.Lease)
	for _, i := range seat.Nodes {
		if st := s.placer.Node(i).State; st != platform.Up {
			s.err = fmt.Errorf("tick %d: lease %d seated on node %d, %v", e.T, e.Lease, i, st)
		}
	}
	for i := range s.placer.Nodes() {
		if n := s.placer.Node(i); n.State == platform.Down && n.Used > 0 {
			s.err = fmt.Errorf("tick %d: %d GPUs in use on down node %d", e.T, n.Used, i)
		}
	}
}

// Under every policy, on random nodes and hosts that fail and degrade
// often: no job is seated on a node that is not up, none runs on a down
// node, and skipping quiet ticks changes neither the journal, the records
// nor the tally.
func TestReplayHostsNeverOnADownNode(t *testing.T) {
	for _, name := range forkedPolicies {
		t.Run(name, func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				nodes := rapid.IntRange(1, 4).Draw(t, "nodes")
				w := randomTrace(t)
				w.Pool = nodes * 4
				for i := range w.Jobs {
					w.Jobs[i].GPUs = rapid.IntRange(1, w.Pool).Draw(t, "gpus")
				}
				if name == "bursar" {
					w.BucketHours = DefaultBucketHours
				}
				cfg := hosts.Config{
					FailPerNodeDay:    rapid.Float64Range(0, 100).Draw(t, "fail"),
					DegradePerNodeDay: rapid.Float64Range(0, 100).Draw(t, "degrade"),
					FailRepair:        int64(rapid.IntRange(1, 2000).Draw(t, "fail_repair")),
					DrainRepair:       int64(rapid.IntRange(1, 2000).Draw(t, "drain_repair")),
					RepairSigma:       1,
					Contract:          rapid.Bool().Draw(t, "contract"),
					MinRuntime:        int64(rapid.IntRange(0, 1000).Draw(t, "m")),
					Threshold:         int64(rapid.IntRange(1, 2000).Draw(t, "threshold")),
				}
				seed := rapid.Uint64().Draw(t, "seed")
				spec := platform.Spec{Nodes: nodes, GPUsPerNode: 4}
				replay := func(tickByTick bool) (*Run, []byte) {
					a, err := policies.New(name, policy.DefaultConfig(w.Pool), policies.TraceKnobs())
					if err != nil {
						t.Fatal(err)
					}
					h, err := hosts.New(cfg, nodes, seed)
					if err != nil {
						t.Fatal(err)
					}
					watch := &seatWatch{alloc: a}
					run, err := Replay(w, a, ReplayOptions{Platform: spec, Hosts: h, Recorder: watch, TickByTick: tickByTick, Horizon: 20000})
					if err != nil {
						t.Fatal(err)
					}
					if watch.err != nil {
						t.Fatal(watch.err)
					}
					return run, watch.buf
				}
				skip, js := replay(false)
				every, je := replay(true)
				if !bytes.Equal(js, je) || !slices.Equal(skip.Start, every.Start) || skip.Hosts != every.Hosts || skip.HostLostGPUSeconds != every.HostLostGPUSeconds {
					t.Fatalf("skipping changed the replay: tally %+v against %+v\nstarts %v against %v\nlost %v against %v\n%s\nagainst\n%s", skip.Hosts, every.Hosts, skip.Start, every.Start, skip.HostLostGPUSeconds, every.HostLostGPUSeconds, js, je)
				}
			})
		})
	}
}

// The excerpt on 16 × 8 under fifo and budget, without hosts and with
// hosts that fail and degrade once per node-day each (about 300 times
// Llama 3's rate, so that the drains' steps are in the figure).
func BenchmarkReplayHostsExcerpt(b *testing.B) {
	spec := platform.Spec{Nodes: 16, GPUsPerNode: 8}
	w := loadExcerpt(b, Options{Platform: &spec})
	cfg := hosts.Default()
	cfg.FailPerNodeDay, cfg.DegradePerNodeDay, cfg.Contract = 1, 1, true
	for _, name := range []string{"fifo", "budget"} {
		for _, on := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/hosts=%v", name, on), func(b *testing.B) {
				b.ReportAllocs()
				var r *Run
				for b.Loop() {
					opt := ReplayOptions{}
					if on {
						h, err := hosts.New(cfg, spec.Nodes, 1)
						if err != nil {
							b.Fatal(err)
						}
						opt.Hosts = h
					}
					r = replayPolicy(b, w, name, policies.TraceKnobs(), opt)
				}
				b.ReportMetric(float64(r.Ticks), "ticks")
				b.ReportMetric(float64(r.HostEnded), "host-ended")
			})
		}
	}
}
