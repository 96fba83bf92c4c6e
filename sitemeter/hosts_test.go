package sitemeter

import (
	"fmt"
	"testing"

	"pgregory.net/rapid"

	"github.com/bursar-hpc/bursar/hosts"
	"github.com/bursar-hpc/bursar/platform"
	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/baseline"
	"github.com/bursar-hpc/bursar/trace"
)

// Bursar as a site meters a log, on nodes that fail and drain: the hosts
// find every job's lease on the placer (the broker's ids, a scavenged
// job's too: Root), end it on whichever campaign holds it
// (ReleaseSeated) and the replay requeues it; every lease the hosts ended
// is one run of a job ended by a host in the records, no job is lost
// (every one served by a long horizon), and skipping quiet ticks changes
// no record.
func TestHostsFindEveryJobLease(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		text, opt := genLog(rt)
		w := load(t, text, opt)
		nodes := rapid.SampledFrom([]int{1, 2, 4}).Draw(rt, "nodes")
		if w.Pool%nodes != 0 {
			w.Pool += nodes - w.Pool%nodes
		}
		cfg := hosts.Config{
			FailPerNodeDay:    rapid.Float64Range(0, 20).Draw(rt, "fail"),
			DegradePerNodeDay: rapid.Float64Range(0, 20).Draw(rt, "degrade"),
			FailRepair:        600, DrainRepair: 600, RepairSigma: 1,
			Contract:   rapid.Bool().Draw(rt, "contract"),
			MinRuntime: 1800, Threshold: 3600,
		}
		restart := baseline.Restart{Checkpoint: rapid.SampledFrom([]int{0, 600}).Draw(rt, "checkpoint")}
		spec := platform.Spec{Nodes: nodes, GPUsPerNode: w.Pool / nodes}
		seed := rapid.Uint64().Draw(rt, "seed")
		replayOn := func(tickByTick bool) *trace.Run {
			h, err := hosts.New(cfg, nodes, seed)
			if err != nil {
				rt.Fatal(err)
			}
			b, err := policy.New(policy.DefaultConfig(w.Pool))
			if err != nil {
				rt.Fatal(err)
			}
			s, err := New(b, w)
			if err != nil {
				rt.Fatal(err)
			}
			s.SetRestart(restart)
			down := &downWatch{b: b}
			run, err := trace.Replay(w, s, trace.ReplayOptions{Platform: spec, Hosts: h, TickByTick: tickByTick, Horizon: 60 * 86400, Recorder: down})
			if err != nil {
				rt.Fatal(err)
			}
			if down.err != nil {
				rt.Fatal(down.err)
			}
			return run
		}
		run := replayOn(false)
		ended, host := run.Hosts.FailedLeases+run.Hosts.PreemptibleRequeues+run.Hosts.ContractRequeues+run.Hosts.Interventions, 0
		for _, r := range run.Records {
			host += r.HostEnded
		}
		if ended != run.HostEnded || host != run.HostEnded {
			rt.Fatalf("hosts ended %d leases, the run counts %d, the records %d", ended, run.HostEnded, host)
		}
		if run.UnfinishedJobs != 0 || run.Unserved != 0 {
			rt.Fatalf("unfinished %d, unserved %d", run.UnfinishedJobs, run.Unserved)
		}
		exact := replayOn(true)
		if fmt.Sprint(exact.Records) != fmt.Sprint(run.Records) || exact.Hosts != run.Hosts {
			rt.Fatalf("tick by tick:\n%v %+v\nskipping:\n%v %+v", exact.Records, exact.Hosts, run.Records, run.Hosts)
		}
	})
}

// downWatch checks at every grant that no down node holds a lease: the
// hosts ended every lease on a failed node, and a drained node went down
// only once empty.
type downWatch struct {
	b   *policy.Broker
	err error
}

func (d *downWatch) Record(e policy.Event) {
	if e.Kind != policy.EventGrant || d.err != nil {
		return
	}
	p := d.b.Placer()
	for i := range p.Nodes() {
		if n := p.Node(i); n.State == platform.Down && n.Used > 0 {
			d.err = fmt.Errorf("tick %d: %d GPUs held on down node %d", e.T, n.Used, i)
		}
	}
}
