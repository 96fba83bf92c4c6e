package arrive

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bursar-hpc/bursar/trace"
	"github.com/bursar-hpc/bursar/tracestudy"
)

var update = flag.Bool("update", false, "rewrite testdata/reduced-summary.json from the reduced study")

// reducedStudy is the committed reduced version of the default study:
// two windows of 4 days of the embedded excerpt (half a day of warm-up
// and cool-down), the agents staying 12 h, k ≤ 2, one seed, fifo and
// fairshare both ways and the bursar line. It exercises everything the
// default study does (windows, the log's history, the arrival draw, both
// modes, the k = 0 dedupe, intervals over windows) in seconds.
func reducedStudy(t *testing.T) (*Study, *trace.Workload) {
	t.Helper()
	st := NewStudy()
	st.Policies, st.MaxK, st.Seeds, st.Stay = []string{"fifo", "fairshare", BursarLine}, 2, []int64{1}, 12*3600
	w, err := st.Lay(tracestudy.BuiltinExcerpt, trace.Options{}, 2, 4, 12*3600, 12*3600)
	require.NoError(t, err)
	require.NoError(t, st.Check())
	st.Plan()
	return st, w
}

// TestReducedSummaryReproduces: the committed reduced summary
// (testdata/reduced-summary.json) is what the code computes now, byte for
// byte; run with -update after a change that is meant to move it.
func TestReducedSummaryReproduces(t *testing.T) {
	if testing.Short() {
		t.Skip("replays the reduced study")
	}
	st, w := reducedStudy(t)
	rs, err := st.ExecutePlan(context.Background(), st.NewPlan(""), sweepOptions(2))
	require.NoError(t, err)
	s := &Summary{Trace: tracestudy.Info(w, tracestudy.ExcerptName, 0, 0), Study: st, Warmup: 12 * 3600, Cooldown: 12 * 3600, Runs: rs}
	got, err := s.marshal()
	require.NoError(t, err)
	path := filepath.Join("testdata", "reduced-summary.json")
	if *update {
		require.NoError(t, os.WriteFile(path, got, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err)
	require.True(t, bytes.Equal(want, got), "the reduced study no longer reproduces %s (go test ./arrive -run TestReducedSummaryReproduces -update rewrites it)", path)
}
