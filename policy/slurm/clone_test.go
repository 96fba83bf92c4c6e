package slurm_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bursar-hpc/bursar/policy/baseline"
	bt "github.com/bursar-hpc/bursar/policy/baseline/baselinetest"
	"github.com/bursar-hpc/bursar/policy/slurm"
)

// slurm copies its own rule for a fork (CloneRule): what
// internal/deepcopy would copy, field for field, along a small workload,
// at Slurm's defaults (no usage books, the queue the pending list's),
// with Fair Tree and age weights (the books, the tree, the kept queue),
// and under classic fair share. A table added to the rule, its
// priorities, its tree or its backfill and forgotten in CloneRule fails
// here, as does one copied but shared.
func TestCloneRuleCopiesEveryField(t *testing.T) {
	weighted := slurm.DefaultKnobs()
	weighted.WFairshare, weighted.WAge = 10000, 1000
	classic := weighted
	classic.NoFairTree = true
	for _, v := range []struct {
		name  string
		knobs slurm.Knobs
	}{{"default", slurm.DefaultKnobs()}, {"fairtree", weighted}, {"classic", classic}} {
		v.knobs.CalcPeriod = 20
		a, err := slurm.New(bt.Config(8, 10), v.knobs)
		require.NoError(t, err)
		require.Implements(t, (*baseline.RuleCloner)(nil), a.Rule())
		require.NoError(t, bt.CloneRuleMatchesAlong(a), v.name)
	}
}
