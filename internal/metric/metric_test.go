package metric

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type run struct {
	Wait  float64
	Jobs  int
	Lower bool
}

var table = Table[run]{
	Float("mean_wait", "s", func(r *run) *float64 { return &r.Wait }),
	Int("jobs", "jobs", func(r *run) *int { return &r.Jobs }),
	{Key: "derived", Unit: "s", Get: func(r *run) float64 { return r.Wait / float64(r.Jobs) },
		Lower: func(r *run) bool { return r.Lower }},
}

// A table gives its keys and values in its order, looks a key up, and
// writes decoded values back (a count truncated); a metric without a
// setter, or an unknown key, is not set.
func TestTable(t *testing.T) {
	require.Equal(t, []string{"mean_wait", "jobs", "derived"}, table.Keys())
	r := run{Wait: 30, Jobs: 4}
	assert.Equal(t, []float64{30, 4, 7.5}, table.Values(&r))
	assert.Equal(t, 1, table.Index("jobs"))
	assert.Equal(t, -1, table.Index("nope"))
	require.NotNil(t, table.ByKey("derived"))
	assert.Nil(t, table.ByKey("nope"))

	var back run
	for i, v := range table.Values(&r) {
		table.Set(&back, table[i].Key, v)
	}
	assert.Equal(t, r, back)
	assert.True(t, table.Set(&back, "jobs", 2.9))
	assert.Equal(t, 2, back.Jobs, "a count is truncated")
	assert.False(t, table.Set(&back, "derived", 1), "no setter")
	assert.False(t, table.Set(&back, "nope", 1))
	assert.True(t, table.Set(&back, "mean_wait", math.NaN()))
	assert.True(t, math.IsNaN(back.Wait))
}
