package tracestudy

import (
	"reflect"
	"testing"

	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/trace"
)

// summary.json's mapping names the knobs a run used, the defaults
// written out, so that two runs' summaries say how they differ.
func TestSummaryMappingNamesTheKnobs(t *testing.T) {
	for _, c := range []struct {
		opt  trace.Options
		want map[string]any
	}{
		{trace.Options{}, map[string]any{"by": "user", "shares": "lookback", "lookback_days": 90.0, "bucket": "largest-job"}},
		{trace.Options{Shares: trace.ShareGroups}, map[string]any{"by": "user", "shares": "groups", "bucket": "largest-job", "oracle": true}},
		{trace.Options{ByGroup: true, Shares: trace.ShareWindow, Bucket: "hours:24",
			Classes: map[string]policy.Class{"standby": policy.Opportunistic, "express": policy.Interactive}},
			map[string]any{"by": "group", "shares": "window", "bucket": "hours:24", "oracle": true,
				"classes": []string{"express=interactive", "standby=opportunistic"}}},
		{trace.Options{UserCampaigns: true, Shares: trace.ShareUsers},
			map[string]any{"by": "user", "shares": "users", "bucket": "largest-job", "oracle": true, "user_campaigns": true}},
	} {
		if got := MappingMap(c.opt); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%+v: mapping %v, want %v", c.opt, got, c.want)
		}
	}
}
