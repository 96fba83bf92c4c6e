package trace

import (
	"bytes"
	"hash/fnv"
	"slices"
	"testing"

	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/policies"
)

// journal is a Recorder that keeps the JSONL journal.
type journal struct{ buf []byte }

func (j *journal) Record(e policy.Event) {
	j.buf = e.AppendJSON(j.buf)
	j.buf = append(j.buf, '\n')
}

func replayPolicy(t testing.TB, w *Workload, name string, knobs policies.Knobs, opt ReplayOptions) *Run {
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
	got := replayPolicy(t, w, "fifo", policies.DefaultKnobs(), ReplayOptions{})
	want := ReplayEASY(w)
	for i := range want {
		if got.Start[i] != want[i] {
			t.Fatalf("job %d: start %d under fifo, %d under ReplayEASY", w.Jobs[i].Number, got.Start[i], want[i])
		}
	}
	if got.Unserved != 0 || got.Preemptions != 0 {
		t.Fatalf("fifo: %d unserved, %d preemptions", got.Unserved, got.Preemptions)
	}
	if got.Ticks >= int64(w.Jobs[len(w.Jobs)-1].Submit-w.Jobs[0].Submit)/4 {
		t.Fatalf("fifo ticked %d times: the quiet ticks were not skipped", got.Ticks)
	}
}

// Skipping is exact: for every policy that skips, the event-driven replay
// and the tick-by-tick one write byte-identical journals and the same
// starts, preemptions and lost work.
func TestReplaySkippingIsExact(t *testing.T) {
	if testing.Short() {
		t.Skip("tick-by-tick over 28 days")
	}
	whole := loadExcerpt(t, Options{})
	// priority and quota sort their preemption candidates every tick a
	// head is blocked: tick by tick they get the excerpt's first week
	// (priority, slower still, its first two days).
	first := whole.Jobs[0].Submit
	week := loadExcerpt(t, Options{From: first, Until: first + 7*86400})
	days := loadExcerpt(t, Options{From: first, Until: first + 2*86400})
	for _, name := range []string{"bursar", "fifo", "priority", "static", "quota"} {
		t.Run(name, func(t *testing.T) {
			w := whole
			switch name {
			case "priority":
				w = days
			case "quota":
				w = week
			}
			var ej, tj journal
			ev := replayPolicy(t, w, name, policies.DefaultKnobs(), ReplayOptions{Recorder: &ej})
			tk := replayPolicy(t, w, name, policies.DefaultKnobs(), ReplayOptions{Recorder: &tj, TickByTick: true})
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
			if ev.Ticks >= tk.Ticks {
				t.Fatalf("event-driven %d ticks, tick-by-tick %d", ev.Ticks, tk.Ticks)
			}
			h := fnv.New64a()
			h.Write(ej.buf)
			t.Logf("%s: %d journal bytes (fnv %x), %d of %d ticks", name, len(ej.buf), h.Sum64(), ev.Ticks, tk.Ticks)
		})
	}
}
