package sweep

import (
	"bytes"
	"fmt"
	"math"
	"reflect"
	"slices"

	"github.com/bursar-hpc/bursar/engine"
	"github.com/parquet-go/parquet-go"
)

// ParquetFile is runs.parquet, written beside runs.csv.
const ParquetFile = "runs.parquet"

// intScalars are the scalar metrics that are counts: typed int64 in
// runs.parquet (never NaN). The others are doubles, NaN as null.
var intScalars = []string{"victim_violations_in", "warm", "reclaim", "cold", "storm_peak_held"}

// runsColumn is one column of runs.parquet: its name and how a row's cell
// is set on the row struct's field.
type runsColumn struct {
	name string
	typ  reflect.Type
}

var (
	stringType   = reflect.TypeFor[string]()
	int64Type    = reflect.TypeFor[int64]()
	boolType     = reflect.TypeFor[bool]()
	float64Type  = reflect.TypeFor[float64]()
	optFloatType = reflect.TypeFor[*float64]()
)

// runsColumns are runs.csv's columns, in its order, with parquet types:
// experiment and series strings; run, seed and int knobs int64; bool
// knobs boolean; float knobs double; metrics as intScalars says; with
// study, the policy (a string) and the policy-study metrics (optional
// doubles: null for a run that did not measure them), as in runs.csv.
func runsColumns(study bool) []runsColumn {
	cols := []runsColumn{{"experiment", stringType}, {"run", int64Type}, {"series", stringType}}
	for i := range engine.Knobs {
		k := &engine.Knobs[i]
		if k.Name == "seed" {
			continue
		}
		t := float64Type
		switch k.Kind {
		case "int":
			t = int64Type
		case "bool":
			t = boolType
		}
		cols = append(cols, runsColumn{k.Name, t})
	}
	cols = append(cols, runsColumn{"seed", int64Type})
	for _, key := range engine.ScalarKeys {
		t := optFloatType
		if slices.Contains(intScalars, key) {
			t = int64Type
		}
		cols = append(cols, runsColumn{key, t})
	}
	if study {
		cols = append(cols, runsColumn{"policy", stringType})
		for _, key := range engine.StudyKeys {
			cols = append(cols, runsColumn{key, optFloatType})
		}
	}
	return cols
}

// runsRowType is a struct with one field per column, tagged with the
// column's name, so that parquet-go derives the schema with the columns
// in runs.csv's order (a parquet.Group would sort them by name).
func runsRowType(cols []runsColumn) reflect.Type {
	fields := make([]reflect.StructField, len(cols))
	for i, c := range cols {
		tag := c.name
		if c.typ == optFloatType {
			tag += ",optional"
		}
		fields[i] = reflect.StructField{Name: fmt.Sprintf("C%d", i), Type: c.typ, Tag: reflect.StructTag(`parquet:"` + tag + `"`)}
	}
	return reflect.StructOf(fields)
}

// RunsParquet is runs.parquet: the rows of runs.csv (same order, same
// columns) with typed columns, NaN as null.
func RunsParquet(results []*Results) ([]byte, error) {
	study := hasStudy(results)
	cols := runsColumns(study)
	typ := runsRowType(cols)
	var buf bytes.Buffer
	w := parquet.NewWriter(&buf, parquet.SchemaOf(reflect.New(typ).Interface()))
	row := reflect.New(typ)
	for _, r := range results {
		for i := range r.Metrics {
			pt, s := r.Plan.Run(i)
			v := row.Elem()
			v.SetZero()
			c := 0
			set := func(x any) {
				v.Field(c).Set(reflect.ValueOf(x))
				c++
			}
			set(r.Plan.Experiment)
			set(int64(i))
			set(pt.Series)
			for k := range engine.Knobs {
				kn := &engine.Knobs[k]
				if kn.Name == "seed" {
					continue
				}
				switch x := kn.Get(&s); cols[c].typ {
				case int64Type:
					set(int64(x))
				case boolType:
					set(x != 0)
				default:
					set(x)
				}
			}
			set(s.Seed)
			for _, sc := range r.Metrics[i].Scalars() {
				if cols[c].typ == int64Type {
					set(int64(sc.Value))
				} else if math.IsNaN(sc.Value) || math.IsInf(sc.Value, 0) {
					c++ // null, like runs.csv's empty cell
				} else {
					set(&sc.Value)
				}
			}
			if study {
				set(policyName(&s))
				if st := r.Metrics[i].Study; st == nil {
					c += len(engine.StudyKeys)
				} else {
					for _, sc := range st.Scalars() {
						if math.IsNaN(sc.Value) || math.IsInf(sc.Value, 0) {
							c++
						} else {
							set(&sc.Value)
						}
					}
				}
			}
			if err := w.Write(row.Interface()); err != nil {
				return nil, fmt.Errorf("%s: %w", ParquetFile, err)
			}
		}
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("%s: %w", ParquetFile, err)
	}
	return buf.Bytes(), nil
}
