package policies_test

import (
	"encoding/json"
	"testing"

	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/baseline"
	"github.com/bursar-hpc/bursar/policy/budget"
	"github.com/bursar-hpc/bursar/policy/policies"
	"github.com/bursar-hpc/bursar/policy/quota"
	"github.com/bursar-hpc/bursar/policy/slurm"
	"github.com/stretchr/testify/require"
)

// The knobs' JSON is part of every trace run's inputs (plan digests,
// cache keys): it must read byte for byte as it did when the knobs were
// one struct of the five baselines' knob structs, but for the defaults
// issue 30 moved on purpose (quota's Kueue API defaults with their four
// new knobs, static's condo partitions), which must change it: a cached
// run of the old defaults is then never taken for one of the new.
func TestKnobsJSONIsUnchanged(t *testing.T) {
	for _, c := range []struct {
		name  string
		knobs policies.Knobs
		want  string
	}{
		{"default", policies.DefaultKnobs(), `{"priority":{"inflate":null},"static":{"owners":8,"lend":"none","partitions":"condo"},"quota":{"borrowing_limit":-1,"queueing_strategy":"BestEffortFIFO","reclaim_within_cohort":"Never","within_cluster_queue":"Never","borrow_within_cohort":"Never","fair_sharing":false},"fairshare":{"half_life":604800,"w_fairshare":10000,"w_age":1000,"max_age":604800,"calc_period":1},"budget":{"window":604800,"min_runtime":[-1,-1,3600,0],"groups":null,"calc_period":1,"restart":"checkpoint:3600"}}`},
		{"trace", policies.TraceKnobs(), `{"priority":{"inflate":null},"static":{"owners":8,"lend":"none","partitions":"condo"},"quota":{"borrowing_limit":-1,"queueing_strategy":"BestEffortFIFO","reclaim_within_cohort":"Never","within_cluster_queue":"Never","borrow_within_cohort":"Never","fair_sharing":false},"fairshare":{"half_life":604800,"w_fairshare":10000,"w_age":1000,"max_age":604800,"calc_period":300},"budget":{"window":604800,"min_runtime":[-1,-1,3600,0],"groups":null,"calc_period":300,"restart":"checkpoint:3600"}}`},
	} {
		b, err := json.Marshal(c.knobs)
		require.NoError(t, err)
		require.Equal(t, c.want, string(b), c.name)
		// Within a struct too, as a spec or a scenario holds them.
		b, err = json.Marshal(struct{ K policies.Knobs }{c.knobs})
		require.NoError(t, err)
		require.Equal(t, `{"K":`+c.want+`}`, string(b), c.name)
	}
}

// Knobs copy like a struct: editing one policy's knobs in a copy leaves
// the original as it was, and the copy reads the edit back.
func TestKnobsCopyLikeAStruct(t *testing.T) {
	a := policies.DefaultKnobs()
	b := a
	budget.Slot.Edit(&b).Window = 60
	quota.Slot.Set(&b, quota.Knobs{BorrowingLimit: 4})
	require.Equal(t, budget.DefaultKnobs().Window, budget.Slot.Get(a).Window)
	require.Equal(t, quota.DefaultKnobs(), quota.Slot.Get(a))
	require.Equal(t, 60, budget.Slot.Get(b).Window)
	require.Equal(t, 4, quota.Slot.Get(b).BorrowingLimit)
	// A policy's knobs absent from a value read as its zero knobs.
	require.Equal(t, budget.Knobs{}, budget.Slot.Get(policies.Knobs{}))
}

// An optional policy (slurm) is known by name but in no default list, and
// builds at its own defaults from knobs that hold none of its own (its
// knobs are not in DefaultKnobs, which TestKnobsJSONIsUnchanged pins).
func TestOptionalPolicyIsKnownNotDefault(t *testing.T) {
	require.NotContains(t, policies.Names, slurm.Name)
	require.Contains(t, policies.Default.Known(), slurm.Name)
	require.Equal(t, policies.Names, policies.Default.Known()[:len(policies.Names)])
	a, err := policies.New(slurm.Name, policy.DefaultConfig(8), policies.DefaultKnobs())
	require.NoError(t, err)
	require.Equal(t, slurm.Name, a.(*baseline.Core).Rule().Name())
	k := policies.DefaultKnobs()
	slurm.Slot.Set(&k, slurm.Knobs{})
	_, err = policies.New(slurm.Name, policy.DefaultConfig(8), k)
	require.NoError(t, err, "zero knobs read as the defaults")
}
