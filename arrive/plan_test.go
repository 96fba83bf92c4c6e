package arrive

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/bursar-hpc/bursar/figures"
	"github.com/bursar-hpc/bursar/trace"
	"github.com/bursar-hpc/bursar/tracestudy"
	"github.com/stretchr/testify/require"
)

// TestCodecRoundTripIsExact: results through the shard and cache codec
// write the same summary.json, runs.csv and figure as the computed ones.
func TestCodecRoundTripIsExact(t *testing.T) {
	w := loadDays(t, 1)
	specs := Specs([]string{"fifo", "bursar"}, []string{ModeSite, ModeMetered}, 2, []int64{1, 2})
	st := Stay{Stay: 1200}
	rs, err := Execute(context.Background(), w, specs, st, 2, nil)
	require.NoError(t, err)
	back := make([]Result, len(rs))
	for i := range rs {
		b, err := Codec.Encode(&rs[i])
		require.NoError(t, err)
		back[i], err = Codec.Decode(b)
		require.NoError(t, err)
		again, err := Codec.Encode(&back[i])
		require.NoError(t, err)
		require.Equal(t, string(b), string(again))
	}
	a, b := t.TempDir(), t.TempDir()
	info := tracestudy.Info(w, "x", 0, 0)
	files, err := Write(a, figures.SVG, info, st, rs)
	require.NoError(t, err)
	_, err = Write(b, figures.SVG, info, st, back)
	require.NoError(t, err)
	for _, f := range files {
		x, _ := os.ReadFile(filepath.Join(a, f))
		y, _ := os.ReadFile(filepath.Join(b, f))
		require.True(t, bytes.Equal(x, y), f)
	}
	p := NewPlan(SharedInputs("sha256:x", trace.Options{}, w, st), w, specs)
	require.Len(t, p.Runs, len(specs))
	require.Equal(t, "fifo site k=0 seed 1", p.Runs[0].Label)
}
