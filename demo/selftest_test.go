package demo

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSelftestInProcess runs the selftest in this (race-checked) process.
func TestSelftestInProcess(t *testing.T) {
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n, err := Selftest(ctx, &out, "inproc", 50)
	require.NoError(t, err, out.String())
	assert.Greater(t, n, 20)
}
