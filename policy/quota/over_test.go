package quota_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bursar-hpc/bursar/policy/quota"
)

// TestOverBucketsKeepOrder: a pass takes whole every bucket below that
// of the largest borrower's excess (openReaching), so a larger over may
// never fall in a lower bucket, and every over must fit the buckets.
// An over of 0 or less (nothing above the quota) is bucket 0, and up to
// 15 each over has a bucket of its own.
func TestOverBucketsKeepOrder(t *testing.T) {
	for o := -3; o <= 0; o++ {
		require.Equal(t, 0, quota.OverBucket(o), "over %d", o)
	}
	for o := 1; o < 16; o++ {
		require.Equal(t, o, quota.OverBucket(o), "over %d", o)
	}
	prev := 0
	for o := 1; o < 1<<20; o++ {
		if b := quota.OverBucket(o); b != prev && b != prev+1 {
			t.Fatalf("over %d: bucket %d after %d", o, b, prev)
		} else {
			prev = b
		}
	}
	for n := 20; n < 63; n++ {
		lo, hi := 1<<n, 1<<(n+1)-1
		require.Greater(t, quota.OverBucket(lo), quota.OverBucket(lo-1), "over %d", lo)
		require.GreaterOrEqual(t, quota.OverBucket(hi), quota.OverBucket(lo), "over %d", hi)
	}
	require.Less(t, quota.OverBucket(math.MaxInt), quota.OverBuckets)
}
