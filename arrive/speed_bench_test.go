//go:build unix

package arrive

import (
	"syscall"
	"testing"

	"github.com/bursar-hpc/bursar/trace"
	"github.com/bursar-hpc/bursar/tracestudy"
)

// weekStudy is the default study laid on the full SDSC-SP2 log embedded
// in the binary (4 disjoint 7-day windows, docs/studies.md §6.16).
func weekStudy(b *testing.B) *Study {
	st := NewStudy()
	if _, err := st.Lay(tracestudy.BuiltinFull, trace.Options{}, 4, 7, tracestudy.DefaultWarmup, tracestudy.DefaultCooldown); err != nil {
		b.Fatal(err)
	}
	return st
}

// BenchmarkArriveWeek is one run of the default agents-arrive study per
// site policy and mode, on the second 7-day window of the full log: the
// agents arriving after the one-day warm-up (seed 1's draw) and staying
// two days (k = 8), or none (k = 0: the plain replay of the window).
func BenchmarkArriveWeek(b *testing.B) {
	st := weekStudy(b)
	b.ReportMetric(float64(len(st.Loads[1].Jobs)), "jobs")
	for _, k := range []int{0, 8} {
		for _, p := range DefaultPolicies {
			modes := []string{""}
			if k > 0 {
				modes = ModesOf(p)
			}
			for _, m := range modes {
				name := p + "/k=0"
				sp := Spec{Policy: p, Window: 1}
				if k > 0 {
					name = p + "/" + m + "/k=8"
					sp = Spec{Policy: p, Mode: m, K: k, Seed: 1, Window: 1}
				}
				b.Run(name, func(b *testing.B) {
					b.ReportAllocs()
					cpu := cpuNanos()
					for b.Loop() {
						if _, _, _, err := st.RunSpec(sp); err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric(float64(cpuNanos()-cpu)/float64(b.N), "cpu-ns/op")
				})
			}
		}
	}
}

// cpuNanos is the process's user + system CPU time: on a machine shared
// with other jobs it measures the work, where wall time measures the
// contention.
func cpuNanos() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
