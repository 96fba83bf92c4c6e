package trace

import (
	"os"
	"testing"
	"time"

	"github.com/bursar-hpc/bursar/policy/policies"
)

func TestTmpTiming(t *testing.T) {
	w := loadExcerpt(t, Options{})
	if os.Getenv("DAYS") != "" {
		first := w.Jobs[0].Submit
		w = loadExcerpt(t, Options{From: first, Until: first + 3*86400})
	}
	names := policies.Names
	if p := os.Getenv("POL"); p != "" {
		names = []string{p}
	}
	for _, name := range names {
		t0 := time.Now()
		r := replayPolicy(t, w, name, policies.DefaultKnobs(), ReplayOptions{})
		sw, st := r.Served(w)
		m := Summarize(sw, st)
		t.Logf("%-9s %6.2fs ticks %8d unserved %4d preempt %4d lost %9d wait %8.0f bsld %6.1f jain %.3f", name, time.Since(t0).Seconds(), r.Ticks, r.Unserved, r.Preemptions, r.LostGPUSeconds, m.All.MeanWait, m.All.MeanBSLD, m.Jain)
	}
}
