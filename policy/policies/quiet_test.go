package policies_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/bursar-hpc/bursar/policy"
	bt "github.com/bursar-hpc/bursar/policy/baseline/baselinetest"
	"github.com/bursar-hpc/bursar/policy/policies"
)

// How quietRun ticks.
type ticking int

const (
	everyTick ticking = iota // every Tick admits (SetTickByTick)
	quietTick                // the Core keeps only the books in quiet ticks
	skipping                 // a driver that skips the quiet ticks it can
)

// quietRun plays a scenario and returns its journal followed by what the
// campaigns read after every operation (holdings, outstanding, credits,
// supply, flows, the utilization). A run of ticks is ticked as how says:
// skipping ticks once, then asks NextChange before each tick and skips to
// just before it where it can, as trace.Replay does.
func quietRun(t require.TestingT, name string, sc scenario, how ticking) []byte {
	a, err := policies.New(name, sc.cfg, sc.knobs)
	require.NoError(t, err)
	if tt, ok := a.(policy.TickByTicker); ok {
		tt.SetTickByTick(how == everyTick)
	}
	sk, _ := a.(policy.EventSkipper)
	ticks := func(n int) {
		end := a.Now() + n
		// The first tick after calls is ticked, as the drivers do: a skip
		// replays only the bookkeeping of ticks without calls before them.
		a.Tick()
		for a.Now() < end {
			if how == skipping && sk != nil {
				if to := min(sk.NextChange()-1, end); to > a.Now() {
					sk.SkipTo(to)
					continue
				}
			}
			a.Tick()
		}
	}
	j := &bt.Journal{}
	a.SetRecorder(j)
	var ids []policy.CampaignID
	for _, e := range sc.envs {
		id, err := a.Register(e)
		require.NoError(t, err)
		ids = append(ids, id)
	}
	var reads bytes.Buffer
	read := func() {
		fmt.Fprintf(&reads, "t=%d util=%v\n", a.Now(), a.Utilization())
		for _, c := range ids {
			fmt.Fprintf(&reads, " %d held=%d out=%d credits=%v supply=%+v io=%v inf=%v\n", c,
				a.Held(c, policy.AnyClass), a.Outstanding(c, policy.AnyClass), a.Credits(c), a.Supply(c),
				a.FlowUsedLastTick(c, policy.IO), a.FlowUsedLastTick(c, policy.Inference))
		}
	}
	var leases []int
	for _, o := range sc.ops {
		c := ids[o.c]
		switch o.kind {
		case opRequest:
			if id, err := a.Request(c, o.gpus, o.duration, o.class); err == nil {
				leases = append(leases, id)
			}
		case opReleaseAll:
			require.NoError(t, a.ReleaseAll(c, o.class))
		case opReleaseLease:
			if len(leases) > 0 {
				_ = a.ReleaseLease(c, leases[o.n%len(leases)])
			}
		case opConsume:
			_, _, err := a.Consume(c, o.io, o.inf)
			require.NoError(t, err)
		case opTick:
			ticks(1)
		case opTicks:
			ticks(o.n)
		}
		read()
	}
	return append(j.Bytes, reads.Bytes()...)
}

// The quiet-tick shortcut of the baselines' Core changes nothing: every
// policy, on random casts and operation sequences, writes the same journal
// and reads the same numbers as when every Tick admits, and so does a
// driver that skips the quiet ticks in between.
func TestQuietTicksMatchTickByTick(t *testing.T) {
	for _, name := range policies.Default.Known() { // the optional ones too
		t.Run(name, func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				sc := drawScenario(t)
				every := quietRun(t, name, sc, everyTick)
				if quiet := quietRun(t, name, sc, quietTick); !bytes.Equal(every, quiet) {
					t.Fatalf("%s: the quiet ticks changed the run:\n%s", name, firstDiff(every, quiet))
				}
				if skip := quietRun(t, name, sc, skipping); !bytes.Equal(every, skip) {
					t.Fatalf("%s: skipping the quiet ticks changed the run:\n%s", name, firstDiff(every, skip))
				}
			})
		})
	}
}

// firstDiff shows the first line at which two outputs differ.
func firstDiff(a, b []byte) string {
	la, lb := bytes.Split(a, []byte("\n")), bytes.Split(b, []byte("\n"))
	for i := range min(len(la), len(lb)) {
		if !bytes.Equal(la[i], lb[i]) {
			return fmt.Sprintf("line %d:\n  tick by tick: %s\n  quiet:        %s", i+1, la[i], lb[i])
		}
	}
	return fmt.Sprintf("lengths %d and %d lines", len(la), len(lb))
}

// A request dropped between ticks (an agent's ReleaseAll) is a change:
// under fifo, c0 holds 8 of 16 GPUs for 100 s, c1's request for all 16
// heads the queue and c2's for 8 over 1000 s cannot backfill behind it
// (it would still run at c1's shadow time, 101, when c1 needs all 16).
// When c1 gives up after tick 4, c2 heads the queue and starts at tick
// 5 — not at 101, when c0's lease ends, the next event there would be if
// the drop went unnoticed.
func TestQuietTicksSeeAReleasedRequest(t *testing.T) {
	sc := scenario{cfg: policy.Config{Pool: 16, IOCapacity: policy.Unmetered, InferenceCapacity: policy.Unmetered}, knobs: policies.DefaultKnobs()}
	for _, n := range []string{"c0", "c1", "c2"} {
		sc.envs = append(sc.envs, policy.Envelope{Name: n, Budget: 1e9, Sustained: 16, BurstCeiling: 16, Bucket: 1e6, Class: policy.AgentBurst})
	}
	sc.ops = []op{
		{kind: opRequest, c: 0, gpus: 8, duration: 100, class: policy.AnyClass},
		{kind: opTick},
		{kind: opRequest, c: 1, gpus: 16, duration: 100, class: policy.AnyClass},
		{kind: opRequest, c: 2, gpus: 8, duration: 1000, class: policy.AnyClass},
		{kind: opTicks, n: 3},
		{kind: opReleaseAll, c: 1, class: policy.AnyClass},
		{kind: opTicks, n: 5},
	}
	every := quietRun(t, "fifo", sc, everyTick)
	quiet := quietRun(t, "fifo", sc, quietTick)
	require.Contains(t, string(every), `{"t": 5, "event": "grant", "lease": 3, "campaign": "c2", "gpus": 8`)
	require.Equal(t, string(every), string(quiet))
}
