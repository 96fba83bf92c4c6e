package trace

import (
	"testing"

	"github.com/bursar-hpc/bursar/policy/policies"
	"github.com/bursar-hpc/bursar/policy/priority"
	"github.com/bursar-hpc/bursar/policy/quota"
	"github.com/bursar-hpc/bursar/policy/static"
)

// Every policy through trace.Replay (issue 11's speed targets: ≤ 5 s per
// policy on the full SDSC-SP2 log, ≤ 60 s at facility scale). A
// sub-benchmark per policy: run one with -bench 'ReplayPolicy.*/fifo'.
// Each op is one whole replay, with the default horizon; cpu-ns/op is the
// CPU time (the machine is shared, so wall time is noisy) and ticks the
// Ticks executed (the rest were skipped).
// The knobs off their defaults that change a policy's work the most have
// a sub-benchmark of their own: static-scavenger (lend scavenger),
// quota-fair-StrictFIFO and quota-fair-FinalShare (Kueue's first
// fair-sharing strategy alone, LessThanOrEqualToFinalShare). Every
// known policy has one, the optional ones (slurm) too.
func benchPolicies(b *testing.B, w *Workload) {
	// The knobs the trace studies run with: the workload's entitlements,
	// and priority's preempt from the log's header.
	knobs := policies.TraceKnobs()
	knobs.Entitlements = w.Entitlements()
	preempt := w.Preemptible()
	priority.Slot.Edit(&knobs).Preempt = &preempt
	type variant struct {
		name, policy string
		knobs        policies.Knobs
	}
	var vs []variant
	for _, name := range policies.Default.Known() {
		vs = append(vs, variant{name, name, knobs})
	}
	scav, strict, final := knobs, knobs, knobs
	static.Slot.Edit(&scav).Lend = static.LendScavenger
	quota.Slot.Edit(&strict).QueueingStrategy = quota.StrictFIFO
	quota.Slot.Edit(&final).PreemptionStrategies = []string{quota.LessThanOrEqualToFinalShare}
	vs = append(vs, variant{"static-scavenger", static.Name, scav}, variant{"quota-fair-StrictFIFO", quota.FairName, strict},
		variant{"quota-fair-FinalShare", quota.FairName, final})
	for _, v := range vs {
		b.Run(v.name, func(b *testing.B) {
			b.ReportAllocs()
			var r *Run
			cpu := cpuTime()
			for b.Loop() {
				r = replayPolicy(b, w, v.policy, v.knobs, ReplayOptions{})
			}
			reportCPU(b, cpu)
			b.ReportMetric(float64(r.Ticks), "ticks")
			b.ReportMetric(float64(r.UnfinishedJobs), "unfinished")
			b.ReportMetric(float64(r.Unserved), "denied")
			b.ReportMetric(float64(r.Preemptions), "preemptions")
			b.ReportMetric(float64(r.LostGPUSeconds)/3600, "lost-GPU-h")
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
