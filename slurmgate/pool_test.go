package slurmgate

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The pool from sinfo's node lines, by hand: GPUs from GRES when the
// partition has any (typed, with sockets, beside other GRES, a node listed
// twice counted once), else CPUs; bad lines are named.
func TestParseSinfoPool(t *testing.T) {
	n, unit, err := ParseSinfoPool("gpu01|64|gpu:a100:4(S:0-1)\ngpu02|64|gpu:4,mps:400\ngpu01|64|gpu:a100:4(S:0-1)\nlogin|8|(null)\n")
	require.NoError(t, err)
	assert.Equal(t, 8, n)
	assert.Equal(t, "GPUs", unit)
	n, unit, err = ParseSinfoPool("vm|16|(null)\n")
	require.NoError(t, err)
	assert.Equal(t, 16, n)
	assert.Equal(t, "CPUs", unit)
	for in, want := range map[string]string{
		"":                "no node",
		"vm|x|(null)":     `line 1: node vm: CPUs "x" is not a count`,
		"vm|16":           "want NODE|CPUS|GRES",
		"vm|16|gpu:a100:": `GRES "gpu:a100:": cannot read the GPU count`,
	} {
		_, _, err := ParseSinfoPool(in)
		assert.ErrorContains(t, err, want, in)
	}
}
