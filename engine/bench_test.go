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

// BenchmarkScenarioQuiet is a day of a cast that is quiet most of the
// time (the paper's without adaptive-sci, 30 tasks of naive-sci, the
// probe on), event-driven and tick by tick, under Bursar and fifo: what
// event skipping buys where there is something to skip.
func BenchmarkScenarioQuiet(b *testing.B) {
	for _, policy := range []string{"bursar", "fifo"} {
		for _, tbt := range []bool{false, true} {
			name := policy + "/events"
			if tbt {
				name = policy + "/ticks"
			}
			b.Run(name, func(b *testing.B) {
				s := DefaultScenario()
				s.Policy, s.Tasks, s.Probe, s.Ticks = policy, 30, true, 86400
				s = withoutAdaptive(s)
				b.ReportAllocs()
				for b.Loop() {
					if _, err := Run(s, Options{TickByTick: tbt}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
