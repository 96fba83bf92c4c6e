package trace

import (
	"testing"

	"github.com/bursar-hpc/bursar/policy/policies"
)

// The cost of the fair start times (docs/studies.md §4.4: at most +50 % of
// a study's time): each policy replayed with and without the default
// sample of 1,000 jobs, and the exact FCFS + EASY likewise.
func benchFair(b *testing.B, w *Workload) {
	from, until := w.SubmitSpan()
	iv, err := MeasureInterval(from, until, DefaultWarmup, DefaultCooldown)
	if err != nil {
		b.Fatal(err)
	}
	sample := FairSample(w, iv, DefaultFairSample, DefaultFairSeed)
	b.Run("exact/plain", func(b *testing.B) {
		for b.Loop() {
			ReplayExact(w)
		}
	})
	b.Run("exact/fair", func(b *testing.B) {
		for b.Loop() {
			ReplayExactFair(w, sample, DefaultFairSeed)
		}
	})
	for _, name := range policies.Names {
		for _, fair := range []bool{false, true} {
			opt := ReplayOptions{}
			sub := name + "/plain"
			if fair {
				opt.FairStart, opt.FairSeed = sample, DefaultFairSeed
				sub = name + "/fair"
			}
			b.Run(sub, func(b *testing.B) {
				b.ReportAllocs()
				cpu := cpuTime()
				for b.Loop() {
					replayPolicy(b, w, name, policies.TraceKnobs(), opt)
				}
				reportCPU(b, cpu)
			})
		}
	}
}

func BenchmarkFairStartExcerpt(b *testing.B) { benchFair(b, loadExcerpt(b, Options{})) }

func BenchmarkFairStartSDSC(b *testing.B) { benchFair(b, loadFull(b)) }
