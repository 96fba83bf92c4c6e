package csvfile

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCell(t *testing.T) {
	assert.Equal(t, "0.1", Cell(0.1))
	assert.Equal(t, "1e+21", Cell(1e21))
	assert.Equal(t, "-3", Cell(-3))
	assert.Equal(t, "", Cell(math.NaN()))
	assert.Equal(t, "", Cell(math.Inf(-1)))
}

func TestWriteKeepsTheOldFileOnError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runs.csv")
	require.NoError(t, Write(path, []string{"a", "b"}, func(emit func([]string) error) error {
		return emit([]string{"1", "x,y"})
	}))
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "a,b\n1,\"x,y\"\n", string(got))
	boom := errors.New("boom")
	err = Write(path, []string{"a"}, func(emit func([]string) error) error { return boom })
	assert.ErrorIs(t, err, boom)
	again, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, got, again, "a failed write leaves the old file")
}
