package engine

import "testing"

// BenchmarkScenario is one default run with the probe on, as a sweep runs
// it (no journal kept).
func BenchmarkScenario(b *testing.B) {
	s := DefaultScenario()
	s.Probe = true
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Run(s, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkScenarioJournal is the same run keeping the JSON Lines journal,
// as `bursar-sweep run` does.
func BenchmarkScenarioJournal(b *testing.B) {
	s := DefaultScenario()
	s.Probe = true
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Run(s, Options{Journal: true}); err != nil {
			b.Fatal(err)
		}
	}
}
