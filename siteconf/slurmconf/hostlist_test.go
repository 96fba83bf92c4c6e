package slurmconf

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestExpandHostlist(t *testing.T) {
	for in, want := range map[string][]string{
		"node[01-03]":  {"node01", "node02", "node03"},
		"n[1-2,5],m7":  {"n1", "n2", "n5", "m7"},
		"r[1-2]c[8-9]": {"r1c8", "r1c9", "r2c8", "r2c9"},
		"gpu[9-11]-ib": {"gpu9-ib", "gpu10-ib", "gpu11-ib"},
		"plain":        {"plain"},
		"a[008-010]":   {"a008", "a009", "a010"},
	} {
		got, err := expandHostlist(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	for _, bad := range []string{"n[2-1]", "n[a-b]", "n[1-2", "n]1[", "a,,b", "n[-1]", "n[1-999999999]"} {
		_, err := expandHostlist(bad)
		require.Error(t, err, bad)
	}
}

func TestParseTime(t *testing.T) {
	for in, want := range map[string]int64{
		"30": 1800, "30:15": 1815, "1:00:00": 3600, "7-0": 7 * 86400, "1-12": 36 * 3600,
		"2-03:04": 2*86400 + 3*3600 + 4*60, "2-03:04:05": 2*86400 + 3*3600 + 4*60 + 5,
	} {
		got, inf, err := parseTime(in)
		require.NoError(t, err, in)
		require.False(t, inf)
		require.Equal(t, want, got, in)
	}
	_, inf, err := parseTime("UNLIMITED")
	require.NoError(t, err)
	require.True(t, inf)
	for _, bad := range []string{"", "1-", "-1", "1:2:3:4", "1-2:3:4:5", "x", "1.5"} {
		_, _, err := parseTime(bad)
		require.Error(t, err, bad)
	}
}

func TestGresGPUs(t *testing.T) {
	for in, want := range map[string]int{
		"gpu:8": 8, "gpu": 1, "gpu:a100:4(S:0-1)": 4, "gpu:a100:4(S:0-1),gpu:v100:2": 6, "mps:200": 0,
		"gpu:2K": 2048, "shard:64,gpu:h100:8": 8,
	} {
		got, err := gresGPUs(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
}
