package tracestudy

import (
	"testing"

	"github.com/bursar-hpc/bursar/trace"
)

// bursar converges under `shares: window` (issue 19; docs/studies.md
// §3.2, docs/traces.md "The Bursar envelope") on the excerpt and on the
// four 14-day windows of the full SDSC-SP2 log, as `bursar-sweep trace
// --shares window` replays them: every job served, none denied, none left
// at the horizon. Before Bursar's R was split inside a group by the
// members' window work, the equal split left 6 of the excerpt's jobs and
// 54 of the windows' (47 of them measured) unfinished, and no window
// converged (trace's TestWindowRateSplitByWork works the cause by hand).
// About 2 s of CPU.
func TestBursarConvergesUnderWindowShares(t *testing.T) {
	if raceDetector {
		t.Skip("single-goroutine replays: run without -race")
	}
	opt := trace.Options{Shares: trace.ShareWindow}
	_, windows, loads := sdscWindows(t, opt)
	excerpt, err := Load(BuiltinExcerpt, opt)
	if err != nil {
		t.Fatal(err)
	}
	whole, err := WholeStudy(excerpt, TraceSpecs([]string{"bursar"}))
	if err != nil {
		t.Fatal(err)
	}
	whole.Options = opt
	studies := []struct {
		name string
		st   *Study
	}{
		{"excerpt", whole},
		{"sdsc-sp2 4x14d", &Study{Specs: TraceSpecs([]string{"bursar"}), Options: opt, Windows: windows, Loads: loads}},
	}
	for _, s := range studies {
		for i := range s.st.Runs() {
			r, err := s.st.Run(i)
			if err != nil {
				t.Fatal(err)
			}
			sm := r.Summary
			t.Logf("%s window %d: %d jobs measured, %d served, %d denied, %d unfinished, converged %v, mean wait %.1f h",
				s.name, r.Window, sm.Jobs, sm.Served, sm.Denied, sm.Unfinished, sm.Converged, sm.All.MeanWait/3600)
			if !sm.Converged || sm.Served != sm.Jobs || sm.Denied != 0 || sm.Unfinished != 0 {
				t.Errorf("%s window %d: converged %v, %d of %d jobs served, %d denied, %d unfinished; want every job served",
					s.name, r.Window, sm.Converged, sm.Served, sm.Jobs, sm.Denied, sm.Unfinished)
			}
		}
	}
}
