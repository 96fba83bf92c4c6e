package configs

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// --nseeds extends the paper's seeds 7, 11, 13 with the following primes.
func TestNSeedsExtendsThePublishedSeeds(t *testing.T) {
	seeds, err := SeedSequence(8)
	require.NoError(t, err)
	assert.Equal(t, []int64{7, 11, 13, 17, 19, 23, 29, 31}, seeds)
	seeds, err = SeedSequence(1)
	require.NoError(t, err)
	assert.Equal(t, []int64{7}, seeds)
}
