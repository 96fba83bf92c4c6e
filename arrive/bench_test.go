package arrive

import "testing"

// BenchmarkAgentsArrive is one run at the command's defaults (days 252–254
// of the excerpt, agents for six hours) with eight agents.
func BenchmarkAgentsArrive(b *testing.B) {
	w := loadDays(b, 2)
	for _, p := range []string{"fifo", "bursar", "budget"} {
		b.Run(p, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := RunOne(w, Spec{Policy: p, Mode: ModeSite, K: 8, Seed: 1}, Stay{Stay: 6 * 3600}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
