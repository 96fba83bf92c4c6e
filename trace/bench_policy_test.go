package trace

import (
	"testing"

	"github.com/bursar-hpc/bursar/policy/policies"
)

// Every policy through trace.Replay (issue 11's speed targets: ≤ 5 s per
// policy on the full SDSC-SP2 log, ≤ 60 s at facility scale). A
// sub-benchmark per policy: run one with -bench 'ReplayPolicy.*/fifo'.
// Each op is one whole replay, with the default horizon; cpu-ns/op is the
// CPU time (the machine is shared, so wall time is noisy) and ticks the
// Ticks executed (the rest were skipped).
func benchPolicies(b *testing.B, w *Workload) {
	// The knobs the trace studies run with: the workload's entitlements,
	// and priority's preempt from the log's header.
	knobs := policies.TraceKnobs()
	knobs.Entitlements = w.Entitlements()
	preempt := w.Preemptible()
	knobs.Priority.Preempt = &preempt
	for _, name := range policies.Names {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			var r *Run
			cpu := cpuTime()
			for b.Loop() {
				r = replayPolicy(b, w, name, knobs, ReplayOptions{})
			}
			reportCPU(b, cpu)
			b.ReportMetric(float64(r.Ticks), "ticks")
			b.ReportMetric(float64(r.UnfinishedJobs), "unfinished")
		})
	}
}

func BenchmarkReplayPolicyExcerpt(b *testing.B) { benchPolicies(b, loadExcerpt(b, Options{})) }

func BenchmarkReplayPolicySDSC(b *testing.B) { benchPolicies(b, loadFull(b)) }

func BenchmarkReplayPolicyFacilityScale(b *testing.B) {
	w, err := FacilityScale.Generate()
	if err != nil {
		b.Fatal(err)
	}
	benchPolicies(b, w)
}
