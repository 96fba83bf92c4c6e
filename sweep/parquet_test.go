package sweep

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strconv"
	"testing"

	"github.com/bursar-hpc/bursar/configs"
	"github.com/bursar-hpc/bursar/engine"
	"github.com/bursar-hpc/bursar/internal/parquetfile"
	"github.com/parquet-go/parquet-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRunsParquetMatchesRunsCSV reads runs.parquet back and checks it
// against runs.csv: the same columns in the same order, typed (strings,
// int64, booleans, doubles), the same rows, and null exactly where the
// CSV cell is empty (NaN).
func TestRunsParquetMatchesRunsCSV(t *testing.T) {
	_, results := quickPaper(t, []int64{7, 11}, Options{Workers: 2})
	// The paper has NaN percentiles (bucket runs have no probe).
	require.Positive(t, checkParquetMatchesCSV(t, results, false))
	// The comparison's runs name their policy: policy and study columns.
	checkParquetMatchesCSV(t, []*Results{quickCompare(t)}, true)
}

// checkParquetMatchesCSV returns the null cells it read.
func checkParquetMatchesCSV(t *testing.T, results []*Results, study bool) int {
	data, err := RunsParquet(results)
	require.NoError(t, err)
	rows, err := csv.NewReader(bytes.NewReader(RunsCSV(results))).ReadAll()
	require.NoError(t, err)
	header, rows := rows[0], rows[1:]

	f, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
	require.NoError(t, err)
	var names []string
	kinds := map[string]string{}
	for _, field := range f.Schema().Fields() {
		names = append(names, field.Name())
		kinds[field.Name()] = field.Type().Kind().String()
		// Only the float metrics can be NaN, so only they are optional.
		floatMetric := (slices.Contains(engine.ScalarKeys, field.Name()) || slices.Contains(engine.StudyKeys, field.Name())) && kinds[field.Name()] == "DOUBLE"
		assert.Equal(t, floatMetric, field.Optional(), field.Name())
	}
	assert.Equal(t, header, names)
	for col, kind := range map[string]string{"experiment": "BYTE_ARRAY", "run": "INT64", "seed": "INT64", "leaky": "BOOLEAN",
		"probe": "BOOLEAN", "headroom": "INT64", "storm_bucket": "DOUBLE", "warm": "INT64", "utilization": "DOUBLE"} {
		assert.Equal(t, kind, kinds[col], col)
	}
	assert.Equal(t, int64(len(rows)), f.NumRows())

	typ := runsRowType(runsColumns(study))
	r := parquet.NewReader(bytes.NewReader(data))
	nulls := 0
	for i := 0; ; i++ {
		row := reflect.New(typ)
		err := r.Read(row.Interface())
		if errors.Is(err, io.EOF) {
			require.Equal(t, len(rows), i)
			break
		}
		require.NoError(t, err)
		require.Less(t, i, len(rows))
		v := row.Elem()
		for c := range v.NumField() {
			var cell string
			switch x := v.Field(c).Interface().(type) {
			case string:
				cell = x
			case int64:
				cell = strconv.FormatInt(x, 10)
			case bool:
				cell = strconv.FormatBool(x)
			case float64:
				cell = csvNumber(x)
			case *float64:
				if x == nil {
					nulls++
				} else {
					cell = csvNumber(*x)
				}
			}
			assert.Equal(t, rows[i][c], cell, "row %d column %s", i, header[c])
		}
	}
	return nulls
}

// runsRowType is a struct with one field per column, tagged with the
// column's name and type, for parquet-go (an independent reader) to read
// the rows into.
func runsRowType(cols []parquetfile.Column) reflect.Type {
	fields := make([]reflect.StructField, len(cols))
	for i, c := range cols {
		var typ reflect.Type
		switch c.Kind {
		case parquetfile.String:
			typ = reflect.TypeFor[string]()
		case parquetfile.Int64:
			typ = reflect.TypeFor[int64]()
		case parquetfile.Boolean:
			typ = reflect.TypeFor[bool]()
		case parquetfile.Double:
			typ = reflect.TypeFor[float64]()
		}
		tag := c.Name
		if c.Optional {
			typ = reflect.PointerTo(typ)
			tag += ",optional"
		}
		fields[i] = reflect.StructField{Name: fmt.Sprintf("C%d", i), Type: typ, Tag: reflect.StructTag(`parquet:"` + tag + `"`)}
	}
	return reflect.StructOf(fields)
}

// BenchmarkRunsParquet writes runs.parquet for the quick paper grid on 3
// seeds (54 rows).
func BenchmarkRunsParquet(b *testing.B) {
	var plans []*configs.Plan
	for _, name := range configs.Experiments {
		c, err := configs.Default(name)
		require.NoError(b, err)
		p, err := c.Plan(true, []int64{7, 11, 13})
		require.NoError(b, err)
		plans = append(plans, p)
	}
	results, err := Execute(context.Background(), plans, Options{Workers: 2})
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := RunsParquet(results); err != nil {
			b.Fatal(err)
		}
	}
}
