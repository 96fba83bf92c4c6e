package sweep

import (
	"fmt"
	"math"
	"slices"

	"github.com/bursar-hpc/bursar/engine"
	"github.com/bursar-hpc/bursar/internal/parquetfile"
)

// ParquetFile is runs.parquet, written beside runs.csv.
const ParquetFile = "runs.parquet"

// intScalars are the scalar metrics that are counts: typed int64 in
// runs.parquet (never NaN). The others are doubles, NaN as null.
var intScalars = []string{"victim_violations_in", "warm", "reclaim", "cold", "storm_peak_held"}

// runsColumns are runs.csv's columns, in its order, with parquet types:
// experiment and series strings; run, seed and int knobs int64; bool
// knobs boolean; float knobs double; metrics as intScalars says; with
// study, the policy (a string) and the policy-study metrics (optional
// doubles: null for a run that did not measure them), as in runs.csv.
func runsColumns(study bool) []parquetfile.Column {
	cols := []parquetfile.Column{{Name: "experiment", Kind: parquetfile.String}, {Name: "run", Kind: parquetfile.Int64},
		{Name: "series", Kind: parquetfile.String}}
	for i := range engine.Knobs {
		k := &engine.Knobs[i]
		if k.Name == "seed" {
			continue
		}
		kind := parquetfile.Double
		switch k.Kind {
		case "int":
			kind = parquetfile.Int64
		case "bool":
			kind = parquetfile.Boolean
		}
		cols = append(cols, parquetfile.Column{Name: k.Name, Kind: kind})
	}
	cols = append(cols, parquetfile.Column{Name: "seed", Kind: parquetfile.Int64})
	for _, key := range engine.ScalarKeys {
		c := parquetfile.Column{Name: key, Kind: parquetfile.Double, Optional: true}
		if slices.Contains(intScalars, key) {
			c = parquetfile.Column{Name: key, Kind: parquetfile.Int64}
		}
		cols = append(cols, c)
	}
	if study {
		cols = append(cols, parquetfile.Column{Name: "policy", Kind: parquetfile.String})
		for _, key := range engine.StudyKeys {
			cols = append(cols, parquetfile.Column{Name: key, Kind: parquetfile.Double, Optional: true})
		}
	}
	return cols
}

// RunsParquet is runs.parquet: the rows of runs.csv (same order, same
// columns) with typed columns, NaN as null.
func RunsParquet(results []*Results) ([]byte, error) {
	study := hasStudy(results)
	cols := runsColumns(study)
	w, err := parquetfile.NewWriter(cols)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ParquetFile, err)
	}
	// optional writes a float metric: null where runs.csv's cell is empty.
	optional := func(x float64) {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			w.Null()
		} else {
			w.Double(x)
		}
	}
	for _, r := range results {
		for i := range r.Metrics {
			pt, s := r.Plan.Run(i)
			w.String(r.Plan.Experiment)
			w.Int64(int64(i))
			w.String(pt.Series)
			c := 3
			for k := range engine.Knobs {
				kn := &engine.Knobs[k]
				if kn.Name == "seed" {
					continue
				}
				switch x := kn.Get(&s); cols[c].Kind {
				case parquetfile.Int64:
					w.Int64(int64(x))
				case parquetfile.Boolean:
					w.Bool(x != 0)
				default:
					w.Double(x)
				}
				c++
			}
			w.Int64(s.Seed)
			c++
			for _, sc := range r.Metrics[i].Scalars() {
				if cols[c].Kind == parquetfile.Int64 {
					w.Int64(int64(sc.Value))
				} else {
					optional(sc.Value)
				}
				c++
			}
			if study {
				w.String(policyName(&s))
				if st := r.Metrics[i].Study; st == nil {
					for range engine.StudyKeys {
						w.Null()
					}
				} else {
					for _, sc := range st.Scalars() {
						optional(sc.Value)
					}
				}
			}
			if err := w.EndRow(); err != nil {
				return nil, fmt.Errorf("%s: %w", ParquetFile, err)
			}
		}
	}
	b, err := w.Bytes()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ParquetFile, err)
	}
	return b, nil
}
