package metric

import (
	"encoding/json"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The ranges docs/metrics.md's units stand for.
func TestRangeOf(t *testing.T) {
	assert.Equal(t, Range{0, 1}, RangeOf("fraction"))
	assert.Equal(t, Range{0, 1}, RangeOf("index in (0, 1]"))
	assert.Equal(t, Range{0, 1}, RangeOf("0 or 1"))
	assert.Equal(t, Range{0, math.Inf(1)}, RangeOf("s"))
	assert.Equal(t, Range{0, math.Inf(1)}, RangeOf("jobs"))
	assert.Equal(t, Unbounded, RangeOf("—"))
	assert.Equal(t, Range{-1, 1}, RangeOf("fraction").Diff())
	assert.Equal(t, Unbounded, RangeOf("jobs").Diff())
}

// nested are the interval fields of summary.json documented in a table
// without a unit column (docs/metrics.md, the trace study's run fields):
// fair_start's late_fraction (late ÷ n) and mean_miss (s), shares' jain
// (an index); a primary contrast's as_ratio (policy ÷ fifo, a ratio).
var nested = map[string]string{"late_fraction": "fraction", "mean_miss": "s", "jain": "index", "as_ratio": "ratio"}

// docUnits reads docs/metrics.md's tables with a unit column: each row's
// key (the cell just before the unit) and its unit.
func docUnits(t *testing.T) map[string]string {
	b, err := os.ReadFile("../../docs/metrics.md")
	require.NoError(t, err)
	units := map[string]string{}
	col := -1
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "|") {
			col = -1
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if col < 0 {
			for i, c := range cells {
				if c == "unit" && i > 0 {
					col = i
				}
			}
			if col < 0 {
				col = -2 // a table without units: skip to its end
			}
			continue
		}
		if col < 1 || len(cells) <= col {
			continue
		}
		key := strings.Trim(cells[col-1], "`")
		if _, seen := units[key]; key != "" && !seen && !strings.HasPrefix(cells[col], "as ") {
			units[key] = cells[col]
		}
	}
	for k, u := range nested {
		units[k] = u
	}
	return units
}

// No interval in a committed summary.json leaves its quantity's range
// (issue 31, docs/studies.md §5.1): walks every results/**/summary.json,
// finds every interval — an object with lo and hi (its quantity the key
// it sits under, or its "metric"), or a pair X_lo, X_hi — and checks it
// against the range of its unit in docs/metrics.md; a difference
// (paired_difference, a contrast) against the range of a difference. An
// interval whose quantity has no documented unit fails too.
func TestCommittedIntervalsInRange(t *testing.T) {
	units := docUnits(t)
	var files, checked int
	err := filepath.WalkDir("../../results", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "summary.json" {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			return err
		}
		files++
		check := func(where, key string, diff bool, lo, hi any) {
			l, lok := lo.(float64)
			h, hok := hi.(float64)
			if !lok && !hok {
				return // no interval (null bounds)
			}
			unit, ok := units[key]
			if !ok {
				t.Errorf("%s %s: interval of %q, which docs/metrics.md gives no unit", path, where, key)
				return
			}
			r := RangeOf(unit)
			if diff {
				r = r.Diff()
			}
			checked++
			if lok && (l < r.Lo || l > r.Hi) || hok && (h < r.Lo || h > r.Hi) || lok && hok && l > h {
				t.Errorf("%s %s: %s interval [%v, %v] leaves its range [%v, %v] (%s)", path, where, key, lo, hi, r.Lo, r.Hi, unit)
			}
		}
		walkIntervals(v, "", false, check)
		return nil
	})
	require.NoError(t, err)
	assert.Greater(t, files, 5, "the committed summaries")
	assert.Greater(t, checked, 1000, "the committed intervals")
}

// walkIntervals calls check on every interval under v; key is the key v
// sits under, diff whether v is inside a paired difference.
func walkIntervals(v any, key string, diff bool, check func(where, key string, diff bool, lo, hi any)) {
	switch o := v.(type) {
	case []any:
		for _, e := range o {
			walkIntervals(e, key, diff, check)
		}
	case map[string]any:
		_, hasLo := o["lo"]
		_, hasHi := o["hi"]
		if hasLo && hasHi {
			q, d := key, diff
			if m, ok := o["metric"].(string); ok {
				q, d = m, true // a contrast: a − b of metric
			}
			check(key, q, d, o["lo"], o["hi"])
		}
		for k, e := range o {
			if base, ok := strings.CutSuffix(k, "_lo"); ok {
				if hi, ok := o[base+"_hi"]; ok {
					check(key+"."+k, base, diff, e, hi)
				}
			}
			walkIntervals(e, k, diff || k == "paired_difference", check)
		}
	}
}
