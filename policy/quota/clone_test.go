package quota_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	bt "github.com/bursar-hpc/bursar/policy/baseline/baselinetest"
	"github.com/bursar-hpc/bursar/policy/quota"
)

// quota copies its own rule for a fork (CloneRule): what
// internal/deepcopy would copy, field for field, along a small workload,
// under both queueing strategies.
func TestCloneRuleCopiesEveryField(t *testing.T) {
	for _, s := range []string{quota.BestEffortFIFO, quota.StrictFIFO} {
		k := quota.FairKnobs()
		k.QueueingStrategy = s
		a, err := quota.New(bt.Config(8, 10), k)
		require.NoError(t, err)
		require.NoError(t, bt.CloneRuleMatchesAlong(a), s)
	}
}
