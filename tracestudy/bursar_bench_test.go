package tracestudy

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/policies"
	"github.com/bursar-hpc/bursar/trace"
)

// Benchmarks of the Bursar broker as the whole policy on a trace
// (docs/studies.md §3): one op is one plain trace.Replay of the log under
// the default mapping (bucket: largest-job), no fair-start forks, no
// journal; the target is ≤ 5 s per full log (issue 19). cpu-ns/op is the
// CPU time (the machine is shared, so wall time is noisy), ticks the
// ticks executed (the rest were skipped). Run one with
// `go test -run '^$' -bench BursarReplay/sdsc-sp2 -benchtime 1x ./tracestudy/`.
func BenchmarkBursarReplay(b *testing.B) {
	logs := []struct{ name, path string }{
		{"excerpt", BuiltinExcerpt},
		{"sdsc-sp2", BuiltinFull},
	}
	// The KTH-SP2 log is not embedded: it is read from BURSAR_TRACES
	// when that is set and holds it.
	if dir := os.Getenv("BURSAR_TRACES"); dir != "" {
		logs = append(logs, struct{ name, path string }{"kth-sp2", filepath.Join(dir, "KTH-SP2-1996-2.1-cln.swf.gz")})
	}
	for _, l := range logs {
		b.Run(l.name, func(b *testing.B) {
			if _, _, ok := Builtin(l.path); !ok {
				if _, err := os.Stat(l.path); err != nil {
					b.Skipf("%s not present: %v", l.name, err)
				}
			}
			w, err := Load(l.path, trace.Options{})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			var r *trace.Run
			cpu := cpuTime()
			for b.Loop() {
				a, err := policies.New(policies.Bursar, policy.DefaultConfig(w.Pool), policies.TraceKnobs())
				if err != nil {
					b.Fatal(err)
				}
				if r, err = trace.Replay(w, a, trace.ReplayOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			if c := cpuTime(); c > 0 && b.N > 0 {
				b.ReportMetric(float64(c-cpu)/float64(b.N), "cpu-ns/op")
			}
			b.ReportMetric(float64(r.Ticks), "ticks")
		})
	}
}
