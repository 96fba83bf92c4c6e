package trace

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// The full SDSC-SP2 log is not committed (1.2 MB; docs/traces.md says where
// to download it). The benchmarks read it from the folder named by
// $BURSAR_TRACES, under its archive name, and skip without it.
var fullSDSC = filepath.Join(os.Getenv("BURSAR_TRACES"), "SDSC-SP2-1998-4.2-cln.swf.gz")

func loadFull(b *testing.B) *Workload {
	if os.Getenv("BURSAR_TRACES") == "" {
		b.Skip("set BURSAR_TRACES to the folder holding SDSC-SP2-1998-4.2-cln.swf.gz")
	}
	if _, err := os.Stat(fullSDSC); err != nil {
		b.Skipf("full SDSC-SP2 log not present: %v", err)
	}
	w, err := Load(fullSDSC, Options{})
	if err != nil {
		b.Fatal(err)
	}
	return w
}

func BenchmarkLoadSDSC(b *testing.B) {
	loadFull(b)
	b.ReportAllocs()
	cpu := cpuTime()
	for b.Loop() {
		loadFull(b)
	}
	reportCPU(b, cpu)
}

func BenchmarkReplaySDSC(b *testing.B) {
	w := loadFull(b)
	b.ReportMetric(float64(len(w.Jobs)), "jobs")
	b.ReportAllocs()
	cpu := cpuTime()
	for b.Loop() {
		ReplayEASY(w)
	}
	reportCPU(b, cpu)
}

// reportCPU adds the CPU time per operation (all threads, GC included)
// since cpu0 as "cpu-ns/op".
func reportCPU(b *testing.B, cpu0 int64) {
	if c := cpuTime(); c > 0 && b.N > 0 {
		b.ReportMetric(float64(c-cpu0)/float64(b.N), "cpu-ns/op")
	}
}

func BenchmarkSummarizeSDSC(b *testing.B) {
	w := loadFull(b)
	start := ReplayEASY(w)
	b.ReportAllocs()
	cpu := cpuTime()
	for b.Loop() {
		Summarize(w, start)
	}
	reportCPU(b, cpu)
}

func BenchmarkReplayExcerpt(b *testing.B) {
	w := loadExcerpt(b, Options{})
	b.ReportAllocs()
	for b.Loop() {
		ReplayEASY(w)
	}
}

// BenchmarkFacilityScale generates the 100,000-GPU, 1,000-campaign, 30-day
// trace, replays it and summarizes it; it reports the peak heap.
func BenchmarkFacilityScale(b *testing.B) {
	b.ReportAllocs()
	var peak uint64
	cpu := cpuTime()
	for b.Loop() {
		w, err := FacilityScale.Generate()
		if err != nil {
			b.Fatal(err)
		}
		start := ReplayEASY(w)
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		peak = max(peak, ms.HeapInuse)
		m := Summarize(w, start)
		runtime.ReadMemStats(&ms)
		peak = max(peak, ms.HeapInuse)
		b.ReportMetric(float64(len(w.Jobs)), "jobs")
		b.ReportMetric(m.Utilization, "util")
	}
	reportCPU(b, cpu)
	b.ReportMetric(float64(peak)/(1<<20), "MB-heap")
}

// BenchmarkReplayFacility is the replay alone on the facility-scale trace.
func BenchmarkReplayFacility(b *testing.B) {
	w, err := FacilityScale.Generate()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	cpu := cpuTime()
	for b.Loop() {
		ReplayEASY(w)
	}
	reportCPU(b, cpu)
}

// Measure on the full log's exact replay: the summary `trace --policy fifo`
// prints, from the records.
func BenchmarkMeasureSDSC(b *testing.B) {
	w := loadFull(b)
	run := ReplayExact(w)
	from, until := w.SubmitSpan()
	iv, err := MeasureInterval(from, until, DefaultWarmup, DefaultCooldown)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	cpu := cpuTime()
	for b.Loop() {
		if _, err := Measure(w, run, iv); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, cpu)
}

// ReplayExact on the full log: the replay with its records.
func BenchmarkReplayExactSDSC(b *testing.B) {
	w := loadFull(b)
	b.ReportAllocs()
	cpu := cpuTime()
	for b.Loop() {
		ReplayExact(w)
	}
	reportCPU(b, cpu)
}
