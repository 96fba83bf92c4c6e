package tracestudy

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/bursar-hpc/bursar/policy/baseline"
	"github.com/bursar-hpc/bursar/policy/budget"
	"github.com/bursar-hpc/bursar/policy/policies"
	"github.com/bursar-hpc/bursar/policy/quota"
	"github.com/bursar-hpc/bursar/policy/static"
	"github.com/bursar-hpc/bursar/trace"
)

// BenchmarkFullLog is one run of `bursar-sweep trace` on a whole log
// (issue 19's target: ≤ 5 s per policy): the same Study.Run the command
// makes for each policy, on the one window of the whole log with the
// default warm-up and cool-down, the log's recorded usage before it for
// fairshare and budget, and the share-based fairness against the fifo
// control; loading the log is outside the loop. The logs are the embedded
// full SDSC-SP2 log (always) and KTH-SP2 from $BURSAR_TRACES (skipped
// without it; docs/traces.md). Each policy runs without fair start times
// (fair=0) and with the default sample (fair=1000, trace.DefaultFairSample).
// Beside every policy at the trace studies' knobs, the knobs that change a
// policy's work the most have a variant: static-scavenger (lend:
// scavenger), quota-StrictFIFO, budget-zero (restart: zero; budget's
// default is checkpoint:3600). cpu-ns/op is the process's CPU time per
// run (all threads, GC included): on a shared machine it measures the
// work, where ns/op measures the contention too. Run one cell with e.g.
// -bench 'FullLog/sdsc-sp2/quota/fair=0$' -benchtime 1x.
func BenchmarkFullLog(b *testing.B) {
	type variant struct {
		name, policy string
		knobs        func(*policies.Knobs)
	}
	vs := make([]variant, 0, len(policies.Names)+3)
	for _, n := range policies.Names {
		vs = append(vs, variant{name: n, policy: n})
	}
	vs = append(vs,
		variant{"static-scavenger", static.Name, func(k *policies.Knobs) { static.Slot.Edit(k).Lend = static.LendScavenger }},
		variant{"quota-StrictFIFO", quota.Name, func(k *policies.Knobs) { quota.Slot.Edit(k).QueueingStrategy = quota.StrictFIFO }},
		variant{"budget-zero", "budget", func(k *policies.Knobs) { budget.Slot.Edit(k).Restart = baseline.Restart{} }})
	logs := []struct{ name, path string }{
		{BuiltinFull, BuiltinFull},
		{"kth-sp2", filepath.Join(os.Getenv("BURSAR_TRACES"), "KTH-SP2-1996-2.1-cln.swf.gz")},
	}
	for _, lg := range logs {
		b.Run(lg.name, func(b *testing.B) {
			if lg.path != BuiltinFull {
				if os.Getenv("BURSAR_TRACES") == "" {
					b.Skip("set BURSAR_TRACES to the folder holding KTH-SP2-1996-2.1-cln.swf.gz")
				}
				if _, err := os.Stat(lg.path); err != nil {
					b.Skipf("KTH-SP2 log not present: %v", err)
				}
			}
			var opt trace.Options
			w, err := LoadRange(lg.path, opt)
			if err != nil {
				b.Fatal(err)
			}
			win, err := WholeWindow(w, opt, DefaultWarmup, DefaultCooldown)
			if err != nil {
				b.Fatal(err)
			}
			var recorded []Recorded
			for _, v := range vs {
				b.Run(v.name, func(b *testing.B) {
					spec := TraceSpecs([]string{v.policy})[0]
					if v.knobs != nil {
						v.knobs(&spec.Knobs)
					}
					st := &Study{Specs: []Spec{spec}, Windows: []Window{win}, Loads: []*trace.Workload{w}, Options: opt}
					if Lookback(spec) > 0 {
						if recorded == nil {
							if recorded, err = ReadRecorded(lg.path, w.Pool); err != nil {
								b.Fatal(err)
							}
						}
						st.Recorded = recorded
					}
					for _, fair := range []int{0, trace.DefaultFairSample} {
						st.FairSample = fair
						b.Run(fmt.Sprintf("fair=%d", fair), func(b *testing.B) {
							b.ReportAllocs()
							var r Result
							cpu := cpuTime()
							for b.Loop() {
								if r, err = st.Run(0); err != nil {
									b.Fatal(err)
								}
							}
							if c := cpuTime(); c > 0 && b.N > 0 {
								b.ReportMetric(float64(c-cpu)/float64(b.N), "cpu-ns/op")
							}
							b.ReportMetric(float64(r.Ticks), "ticks")
							b.ReportMetric(float64(r.Preemptions), "preemptions")
						})
					}
				})
			}
		})
	}
}
