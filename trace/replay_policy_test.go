package trace

import (
	"bytes"
	"fmt"
	"hash/fnv"
	"reflect"
	"slices"
	"testing"

	"github.com/bursar-hpc/bursar/internal/testlong"
	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/budget"
	"github.com/bursar-hpc/bursar/policy/fairshare"
	"github.com/bursar-hpc/bursar/policy/policies"
	"pgregory.net/rapid"
)

// journal is a Recorder that keeps the JSONL journal.
type journal struct{ buf []byte }

func (j *journal) Record(e policy.Event) {
	j.buf = e.AppendJSON(j.buf)
	j.buf = append(j.buf, '\n')
}

func replayPolicy(t interface {
	Helper()
	Fatal(...any)
	Fatalf(string, ...any)
}, w *Workload, name string, knobs policies.Knobs, opt ReplayOptions) *Run {
	t.Helper()
	a, err := policies.New(name, policy.DefaultConfig(w.Pool), knobs)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Replay(w, a, opt)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return r
}

// fifo through the allocator contract is §2.1 exactly: the same start for
// every job as the independent event-driven ReplayEASY.
func TestReplayFifoMatchesReplayEASY(t *testing.T) {
	w := loadExcerpt(t, Options{})
	got := replayPolicy(t, w, "fifo", policies.TraceKnobs(), ReplayOptions{})
	want := ReplayEASY(w)
	for i := range want {
		if got.Start[i] != want[i] {
			t.Fatalf("job %d: start %d under fifo, %d under ReplayEASY", w.Jobs[i].Number, got.Start[i], want[i])
		}
	}
	if got.Unserved != 0 || got.Preemptions != 0 {
		t.Fatalf("fifo: %d unserved, %d preemptions", got.Unserved, got.Preemptions)
	}
	// The records too: ReplayExact, which `fifo` on a trace runs, is the
	// allocator path job for job.
	exact := ReplayExact(w)
	if !reflect.DeepEqual(got.Records, exact.Records) {
		for i := range exact.Records {
			if !reflect.DeepEqual(got.Records[i], exact.Records[i]) {
				t.Fatalf("job %d: record %+v under fifo, %+v under ReplayExact", w.Jobs[i].Number, got.Records[i], exact.Records[i])
			}
		}
	}
	if !got.Converged || !exact.Converged || got.Stop != exact.Stop || got.HeldGPUSeconds != exact.HeldGPUSeconds || got.End != exact.End {
		t.Fatalf("fifo: converged %v stop %d held %d end %d; ReplayExact: %v %d %d %d", got.Converged, got.Stop, got.HeldGPUSeconds, got.End,
			exact.Converged, exact.Stop, exact.HeldGPUSeconds, exact.End)
	}
	if got.Ticks >= int64(w.Jobs[len(w.Jobs)-1].Submit-w.Jobs[0].Submit)/4 {
		t.Fatalf("fifo ticked %d times: the quiet ticks were not skipped", got.Ticks)
	}
}

// Skipping is exact: for every policy that skips, the event-driven replay
// and the tick-by-tick one write byte-identical journals and the same
// starts, preemptions and lost work.
func TestReplaySkippingIsExact(t *testing.T) {
	testlong.Skip(t, "every policy tick by tick over the excerpt")
	if testing.Short() {
		t.Skip("tick-by-tick over 28 days")
	}
	whole := loadExcerpt(t, Options{})
	// priority and quota sort their preemption candidates every tick a
	// head is blocked, and budget's queue grows long: tick by tick they get
	// the excerpt's first week (priority, slower still, its first two
	// days).
	first := whole.Jobs[0].Submit
	week := loadExcerpt(t, Options{From: first, Until: first + 7*86400})
	days := loadExcerpt(t, Options{From: first, Until: first + 2*86400})
	for _, name := range []string{"bursar", "fifo", "priority", "static", "quota", "fairshare", "budget"} {
		t.Run(name, func(t *testing.T) {
			w := whole
			switch name {
			case "priority":
				w = days
			case "quota", "budget":
				w = week
			}
			var ej, tj journal
			ev := replayPolicy(t, w, name, policies.TraceKnobs(), ReplayOptions{Recorder: &ej})
			tk := replayPolicy(t, w, name, policies.TraceKnobs(), ReplayOptions{Recorder: &tj, TickByTick: true})
			if !bytes.Equal(ej.buf, tj.buf) {
				a, b := bytes.Split(ej.buf, []byte("\n")), bytes.Split(tj.buf, []byte("\n"))
				for i := range min(len(a), len(b)) {
					if !bytes.Equal(a[i], b[i]) {
						t.Fatalf("journal line %d:\n event-driven %s\n tick-by-tick %s", i+1, a[i], b[i])
					}
				}
				t.Fatalf("journals differ in length: %d and %d lines", len(a), len(b))
			}
			if !slices.Equal(ev.Start, tk.Start) || ev.Preemptions != tk.Preemptions || ev.LostGPUSeconds != tk.LostGPUSeconds ||
				ev.HeldGPUSeconds != tk.HeldGPUSeconds || ev.End != tk.End || ev.Unserved != tk.Unserved {
				t.Fatal("runs differ")
			}
			if ev.Ticks*4 >= tk.Ticks {
				t.Fatalf("event-driven %d ticks, tick-by-tick %d: the quiet ticks were not skipped", ev.Ticks, tk.Ticks)
			}
			h := fnv.New64a()
			h.Write(ej.buf)
			t.Logf("%s: %d journal bytes (fnv %x), %d of %d ticks", name, len(ej.buf), h.Sum64(), ev.Ticks, tk.Ticks)
		})
	}
}

// The paced rules skip exactly on random traces, across their knobs:
// fairshare's half-life and calculation period, budget's window, minimum
// runtimes, groups and calculation period. Jobs of every trace class, so
// that opportunistic leases are preempted and minimum runtimes run out;
// a short horizon, so that a budget that churns ends.
func TestRandomTracesSkipExactly(t *testing.T) {
	var ticked, executed int64
	rapid.Check(t, func(t *rapid.T) {
		w := classedTrace(t, 16, 30, 400, 300)
		knobs := policies.TraceKnobs()
		name := rapid.SampledFrom([]string{"fairshare", "budget"}).Draw(t, "policy")
		period := rapid.SampledFrom([]int{1, 7, 60, 300, 3600}).Draw(t, "calc-period")
		fairshare.Slot.Edit(&knobs).CalcPeriod, budget.Slot.Edit(&knobs).CalcPeriod = period, period
		fairshare.Slot.Edit(&knobs).HalfLife = rapid.SampledFrom([]float64{1, 60, 604800}).Draw(t, "half-life")
		fairshare.Slot.Edit(&knobs).MaxAge = rapid.SampledFrom([]float64{100, 604800}).Draw(t, "max-age")
		budget.Slot.Edit(&knobs).Window = rapid.SampledFrom([]int{1, 50, 3600, 604800}).Draw(t, "window")
		for _, c := range []policy.Class{policy.Interactive, policy.AgentBurst, policy.Opportunistic} {
			budget.Slot.Edit(&knobs).MinRuntime[c] = rapid.SampledFrom([]int{0, 5, 300}).Draw(t, "min-runtime")
		}
		if len(w.Campaigns) > 2 && rapid.Bool().Draw(t, "groups") {
			budget.Slot.Edit(&knobs).Groups = []budget.Group{{Name: "g", Members: []string{"user 0", "user 1"}}}
		}
		var ej, tj journal
		opt := ReplayOptions{Recorder: &ej, Horizon: 3000}
		ev := replayPolicy(t, w, name, knobs, opt)
		opt.Recorder, opt.TickByTick = &tj, true
		tk := replayPolicy(t, w, name, knobs, opt)
		if !bytes.Equal(ej.buf, tj.buf) {
			t.Fatalf("journals differ:\nevent-driven:\n%s\ntick-by-tick:\n%s", ej.buf, tj.buf)
		}
		if !slices.Equal(ev.Start, tk.Start) || ev.Preemptions != tk.Preemptions || ev.LostGPUSeconds != tk.LostGPUSeconds ||
			ev.HeldGPUSeconds != tk.HeldGPUSeconds || ev.End != tk.End || ev.Unserved != tk.Unserved || ev.UnfinishedJobs != tk.UnfinishedJobs {
			t.Fatalf("runs differ:\nevent-driven %+v\ntick-by-tick %+v", ev, tk)
		}
		if ev.Ticks > tk.Ticks {
			t.Fatalf("event-driven %d ticks, tick-by-tick %d", ev.Ticks, tk.Ticks)
		}
		executed += ev.Ticks
		ticked += tk.Ticks
	})
	if executed*2 >= ticked {
		t.Fatalf("event-driven replays ticked %d of %d seconds: hardly anything was skipped", executed, ticked)
	}
	t.Logf("event-driven replays ticked %d of %d seconds", executed, ticked)
}

// Bursar's skipping is exact on the excerpt with other knobs too (groups
// with equal shares and a 2-hour bucket, so that rate caps bind often; the
// leaky grant-time enforcement): the same journal, run, metrics and final
// broker state as ticking every second, and most ticks skipped.
func TestReplayBursarSkippingIsExact(t *testing.T) {
	testlong.Skip(t, "Bursar tick by tick over the excerpt")
	if testing.Short() {
		t.Skip("tick-by-tick over 28 days")
	}
	for _, tc := range []struct {
		name          string
		opt           Options
		grantTimeOnly bool
		// skipped: at most 1/skipped of the seconds are ticked. The leaky
		// mode preempts and requeues opportunistic jobs over and over (some
		// 326,000 times over the whole excerpt, so it gets the first week
		// here): a real tick every few seconds.
		skipped int64
	}{
		{"groups-2h-bucket", Options{ByGroup: true, Shares: ShareEqualUsers, Bucket: "hours:2"}, false, 100},
		{"grant-time-only", Options{From: 21772800, Until: 21772800 + 7*86400}, true, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := loadExcerpt(t, tc.opt)
			cfg := policy.DefaultConfig(w.Pool)
			cfg.GrantTimeOnly = tc.grantTimeOnly
			replay := func(tickByTick bool) (*Run, *policy.Broker, []byte) {
				b, err := policy.New(cfg)
				if err != nil {
					t.Fatal(err)
				}
				var j journal
				r, err := Replay(w, b, ReplayOptions{Recorder: &j, TickByTick: tickByTick})
				if err != nil {
					t.Fatal(err)
				}
				return r, b, j.buf
			}
			ev, eb, ej := replay(false)
			tk, tb, tj := replay(true)
			if !bytes.Equal(ej, tj) {
				a, b := bytes.Split(ej, []byte("\n")), bytes.Split(tj, []byte("\n"))
				for i := range min(len(a), len(b)) {
					if !bytes.Equal(a[i], b[i]) {
						t.Fatalf("journal line %d:\n event-driven %s\n tick-by-tick %s", i+1, a[i], b[i])
					}
				}
				t.Fatalf("journals differ in length: %d and %d lines", len(a), len(b))
			}
			evTicks := ev.Ticks
			ev.Ticks = tk.Ticks
			if !reflect.DeepEqual(ev, tk) {
				t.Fatal("runs differ")
			}
			sw, ss := ev.Served(w)
			tw, ts := tk.Served(w)
			// %v prints every float exactly (shortest round trip), NaN alike.
			if me, mt := fmt.Sprintf("%+v", Summarize(sw, ss)), fmt.Sprintf("%+v", Summarize(tw, ts)); me != mt {
				t.Fatalf("metrics differ:\n %+v\n %+v", me, mt)
			}
			if eb.Now() != tb.Now() || eb.Utilization() != tb.Utilization() {
				t.Fatalf("clock %d/%d, utilization %v/%v", eb.Now(), tb.Now(), eb.Utilization(), tb.Utilization())
			}
			for c := range eb.NumCampaigns() {
				id := policy.CampaignID(c)
				if eb.Supply(id) != tb.Supply(id) || eb.FairDeficit(id) != tb.FairDeficit(id) || eb.Spent(id) != tb.Spent(id) {
					t.Fatalf("campaign %d: supply\n %+v\n %+v", c, eb.Supply(id), tb.Supply(id))
				}
			}
			// Skipping skipped: far fewer ticks than seconds.
			if evTicks*tc.skipped > tk.Ticks {
				t.Fatalf("event-driven %d ticks of %d", evTicks, tk.Ticks)
			}
			t.Logf("%s: %d journal bytes, %d of %d ticks", tc.name, len(ej), evTicks, tk.Ticks)
		})
	}
}

// A skipping replay stops at the horizon's tick, as one that ticks every
// second does: a job that would end one second after it is unfinished in
// both (the skip used to land on the horizon and tick once more).
func TestReplayStopsAtTheHorizonWhenSkipping(t *testing.T) {
	const horizon = 500
	// Tick t is second t − 1: the job is filed for tick 1, starts then and
	// would end at tick 1 + run = stop + 1, stop = 1 + horizon.
	w := small(4, [4]int64{0, horizon + 1, horizon + 1, 2})
	for _, name := range []string{"bursar", "fifo"} {
		ev := replayPolicy(t, w, name, policies.DefaultKnobs(), ReplayOptions{Horizon: horizon})
		tk := replayPolicy(t, w, name, policies.DefaultKnobs(), ReplayOptions{Horizon: horizon, TickByTick: true})
		if ev.UnfinishedJobs != 1 || tk.UnfinishedJobs != 1 || ev.End != tk.End {
			t.Fatalf("%s: unfinished %d (event-driven), %d (tick by tick); end %d, %d", name, ev.UnfinishedJobs, tk.UnfinishedJobs, ev.End, tk.End)
		}
		if ev.Ticks >= tk.Ticks {
			t.Fatalf("%s: %d ticks event-driven, %d tick by tick", name, ev.Ticks, tk.Ticks)
		}
	}
}
