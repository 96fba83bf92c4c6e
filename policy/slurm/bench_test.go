package slurm_test

import (
	"testing"

	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/baseline"
	"github.com/bursar-hpc/bursar/policy/fifo"
	"github.com/bursar-hpc/bursar/policy/slurm"
	"github.com/bursar-hpc/bursar/trace"
	"github.com/bursar-hpc/bursar/tracestudy"
)

// BenchmarkReplaySlurm replays the embedded SDSC-SP2 logs (the 28-day
// excerpt and the whole 729 days, tracestudy's built-ins) under slurm at
// its defaults (every weight 0: submit order), under slurm with the
// study weights of fairshare (Fair Tree at 10,000, age at 1,000), and
// under fifo (FCFS + EASY) for scale: `go test -run '^$' -bench
// ReplaySlurm -benchmem ./policy/slurm/`. Each op is one whole replay;
// loading the log is outside the loop. mean-wait-s is the jobs' mean wait.
func BenchmarkReplaySlurm(b *testing.B) {
	weighted := slurm.DefaultKnobs()
	weighted.WFairshare, weighted.WAge = 10000, 1000
	for _, log := range []string{tracestudy.BuiltinExcerpt, tracestudy.BuiltinFull} {
		w, err := tracestudy.LoadRange(log, trace.Options{})
		if err != nil {
			b.Fatal(err)
		}
		for _, v := range []struct {
			name string
			make func() (*baseline.Core, error)
		}{
			{"slurm", func() (*baseline.Core, error) { return slurm.New(policy.DefaultConfig(w.Pool), slurm.DefaultKnobs()) }},
			{"slurm-fairtree", func() (*baseline.Core, error) { return slurm.New(policy.DefaultConfig(w.Pool), weighted) }},
			{"fifo", func() (*baseline.Core, error) { return fifo.New(policy.DefaultConfig(w.Pool)) }},
		} {
			b.Run(log+"/"+v.name, func(b *testing.B) {
				b.ReportAllocs()
				var run *trace.Run
				for b.Loop() {
					a, err := v.make()
					if err != nil {
						b.Fatal(err)
					}
					if err := a.SetEntitlements(w.Entitlements()); err != nil {
						b.Fatal(err)
					}
					if run, err = trace.Replay(w, a, trace.ReplayOptions{}); err != nil {
						b.Fatal(err)
					}
				}
				wait := 0.0
				for j := range w.Jobs {
					wait += float64(run.Start[j] - w.Jobs[j].Submit)
				}
				b.ReportMetric(wait/float64(len(w.Jobs)), "mean-wait-s")
				b.ReportMetric(float64(run.Ticks), "ticks")
				b.ReportMetric(float64(run.UnfinishedJobs), "unfinished")
			})
		}
	}
}
