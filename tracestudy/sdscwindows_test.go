package tracestudy

import (
	"testing"

	"github.com/bursar-hpc/bursar/trace"
)

// sdscWindows loads the embedded full SDSC-SP2 log under opt and its four
// 14-day windows with the study's warm-up and cool-down, as `trace
// --trace sdsc-sp2 --windows 4x14d` does (after the log's first 90 days,
// the windows' lookback): the whole log, the windows and each window's
// workload.
func sdscWindows(t *testing.T, opt trace.Options) (*trace.Workload, []Window, []*trace.Workload) {
	t.Helper()
	full, err := LoadRange(BuiltinFull, opt)
	if err != nil {
		t.Fatal(err)
	}
	ws, err := LayWindows(full, opt, 4, 14*Day, DefaultWarmup, DefaultCooldown)
	if err != nil {
		t.Fatal(err)
	}
	loads, err := LoadWindows(BuiltinFull, opt, ws)
	if err != nil {
		t.Fatal(err)
	}
	return full, ws, loads
}
