//go:build unix

package arrive

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/bursar-hpc/bursar/trace"
	"github.com/bursar-hpc/bursar/tracestudy"
)

// loadWeek is the second of the default study's four disjoint 7-day
// windows of the full SDSC-SP2 log (docs/studies.md §6.16), read from
// $BURSAR_TRACES; the benchmark skips without it.
func loadWeek(b *testing.B) *trace.Workload {
	dir := os.Getenv("BURSAR_TRACES")
	if dir == "" {
		b.Skip("set BURSAR_TRACES to the folder holding SDSC-SP2-1998-4.2-cln.swf.gz")
	}
	path := filepath.Join(dir, "SDSC-SP2-1998-4.2-cln.swf.gz")
	full, err := trace.Load(path, trace.Options{})
	if err != nil {
		b.Skipf("full SDSC-SP2 log: %v", err)
	}
	first, last := full.Jobs[0].Submit, full.Jobs[len(full.Jobs)-1].Submit
	ws, err := tracestudy.Windows(first, last, 4, 7*tracestudy.Day, tracestudy.DefaultWarmup, tracestudy.DefaultCooldown)
	if err != nil {
		b.Fatal(err)
	}
	w, err := trace.Load(path, trace.Options{From: ws[1].From, Until: ws[1].Until})
	if err != nil {
		b.Fatal(err)
	}
	return w
}

// BenchmarkArriveWeek is one run of the default agents-arrive study per
// site policy: a 7-day window of the full log, the agents arriving after
// the one-day warm-up and staying two days (k = 8), or none (k = 0: the
// plain replay of the window).
func BenchmarkArriveWeek(b *testing.B) {
	w := loadWeek(b)
	b.ReportMetric(float64(len(w.Jobs)), "jobs")
	st := Stay{Arrive: 86400, Stay: 2 * 86400}
	for _, k := range []int{0, 8} {
		for _, p := range []string{"fifo", "priority", "static", "fairshare", "quota", "budget", "bursar"} {
			modes := []string{ModeSite}
			if k > 0 && p != "bursar" {
				modes = append(modes, ModeMetered)
			}
			for _, m := range modes {
				name := p + "/k=0"
				if k > 0 {
					name = p + "/" + m + "/k=8"
				}
				b.Run(name, func(b *testing.B) {
					b.ReportAllocs()
					cpu := cpuNanos()
					for b.Loop() {
						if _, err := RunOne(w, Spec{Policy: p, Mode: m, K: k, Seed: 1}, st); err != nil {
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
