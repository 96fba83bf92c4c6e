package sweep

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/bursar-hpc/bursar/engine"
	"github.com/bursar-hpc/bursar/internal/atomicfile"
)

// The data files every experiment writes.
const (
	RunsFile      = "runs.csv"
	LatenciesFile = "latencies.json"
	SummaryFile   = "summary.json"
)

// csvNumber writes a number for runs.csv: plain digits, never an
// exponent, and an empty cell for NaN, which pandas, R and polars all read
// as missing without options (a literal NA would turn a polars column
// into text).
func csvNumber(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return ""
	}
	return string(engine.FormatNumber(nil, v))
}

// knobCell writes a knob's value for runs.csv: true/false for a bool
// (read as booleans by pandas and R), a plain number otherwise.
func knobCell(k *engine.Knob, s *engine.Scenario) string {
	if k.Kind == "bool" {
		return k.Format(s)
	}
	return csvNumber(k.Get(s))
}

// RunsCSV is runs.csv: a header, then one row per run, the experiments in
// the order given and each one's runs in plan order. Columns: experiment,
// run (the run's index within its experiment, the key into
// latencies.json), series, every knob but the seed (engine.Knobs order),
// every field swept by path, seed, every scalar metric (engine.ScalarKeys
// order).
func RunsCSV(results []*Results) []byte {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	header := []string{"experiment", "run", "series"}
	var knobs []*engine.Knob
	for i := range engine.Knobs {
		if engine.Knobs[i].Name != "seed" {
			knobs = append(knobs, &engine.Knobs[i])
			header = append(header, engine.Knobs[i].Name)
		}
	}
	// Fields swept by path (campaigns.NAME.FIELD, …) get a column each,
	// after the knobs, in order of first appearance; a config of knobs
	// only has none.
	var paths []*engine.Knob
	for _, r := range results {
		for pi := range r.Plan.Points {
			for _, sw := range r.Plan.Points[pi].Swept {
				if strings.Contains(sw.Knob.Name, ".") && !slices.ContainsFunc(paths, func(k *engine.Knob) bool { return k.Name == sw.Knob.Name }) {
					paths = append(paths, sw.Knob)
					header = append(header, sw.Knob.Name)
				}
			}
		}
	}
	header = append(header, "seed")
	header = append(header, engine.ScalarKeys...)
	// The policy column and the study metrics only when some run names
	// its policy, so that the paper's runs.csv keeps its columns.
	study := hasStudy(results)
	if study {
		header = append(header, "policy")
		header = append(header, engine.StudyKeys...)
	}
	_ = w.Write(header)
	row := make([]string, 0, len(header))
	for _, r := range results {
		for i := range r.Metrics {
			pt, s := r.Plan.Run(i)
			row = append(row[:0], r.Plan.Experiment, strconv.Itoa(i), pt.Series)
			for _, k := range knobs {
				row = append(row, knobCell(k, &s))
			}
			for _, k := range paths {
				row = append(row, knobCell(k, &s))
			}
			row = append(row, strconv.FormatInt(s.Seed, 10))
			for _, sc := range r.Metrics[i].Scalars() {
				row = append(row, csvNumber(sc.Value))
			}
			if study {
				row = append(row, policyName(&s))
				if st := r.Metrics[i].Study; st == nil {
					for range engine.StudyKeys {
						row = append(row, "")
					}
				} else {
					for _, sc := range st.Scalars() {
						row = append(row, csvNumber(sc.Value))
					}
				}
			}
			_ = w.Write(row)
		}
	}
	// Writes to a bytes.Buffer cannot fail.
	w.Flush()
	return buf.Bytes()
}

// object is a JSON object that keeps its keys in the order built, so that
// a reader finds the knobs in grid order and the metrics in model order.
type object []field

type field struct {
	key string
	val any
}

func (o object) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for i, f := range o {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = strconv.AppendQuote(b, f.key)
		b = append(b, ": "...)
		v, err := json.Marshal(f.val)
		if err != nil {
			return nil, err
		}
		b = append(b, v...)
	}
	return append(b, '}'), nil
}

// LatenciesJSON is latencies.json: one object per run, in runs.csv order,
// with its experiment, run index, series, swept knob values and seed, and
// the probe's raw latency lists out of the storm window (probe_lats) and in
// it (probe_lats_in), in the order observed (empty when the probe was off).
// Each list stays on one line so that the file reads as one run per block.
func LatenciesJSON(results []*Results) []byte {
	b := []byte{'['}
	first := true
	for _, r := range results {
		for i := range r.Metrics {
			pt, s := r.Plan.Run(i)
			m := &r.Metrics[i]
			if !first {
				b = append(b, ',')
			}
			first = false
			b = append(b, "\n  {\"experiment\": "...)
			b = strconv.AppendQuote(b, r.Plan.Experiment)
			b = append(b, ", \"run\": "...)
			b = strconv.AppendInt(b, int64(i), 10)
			b = append(b, ", \"series\": "...)
			b = strconv.AppendQuote(b, pt.Series)
			b = append(b, ", \"knobs\": "...)
			knobs, err := sweptObject(pt.Swept, &s).MarshalJSON()
			if err != nil {
				panic(err)
			}
			b = append(b, knobs...)
			b = append(b, ", \"seed\": "...)
			b = strconv.AppendInt(b, s.Seed, 10)
			b = append(b, ",\n   \"probe_lats\": "...)
			b = appendInts(b, m.ProbeLats)
			b = append(b, ",\n   \"probe_lats_in\": "...)
			b = appendInts(b, m.ProbeLatsIn)
			b = append(b, '}')
		}
	}
	if !first {
		b = append(b, '\n')
	}
	return append(b, "]\n"...)
}

func appendInts(b []byte, xs []int) []byte {
	b = append(b, '[')
	for i, x := range xs {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = strconv.AppendInt(b, int64(x), 10)
	}
	return append(b, ']')
}

// DataFiles are the files WriteData writes, in its order: every one of
// them goes into the manifest's outputs.
var DataFiles = []string{RunsFile, LatenciesFile, ParquetFile, SummaryFile}

// WriteData writes runs.csv, latencies.json, runs.parquet and summary.json into dir, each
// atomically. The summary goes last: a folder with a summary holds the data
// it was reduced from.
func WriteData(dir string, results []*Results, summary []byte) error {
	runsParquet, err := RunsParquet(results)
	if err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		data []byte
	}{
		{RunsFile, RunsCSV(results)},
		{LatenciesFile, LatenciesJSON(results)},
		{ParquetFile, runsParquet},
		{SummaryFile, summary},
	} {
		if err := atomicfile.Write(filepath.Join(dir, f.name), f.data); err != nil {
			return err
		}
	}
	return nil
}

// hasStudy reports whether some run of results measured the policy-study
// metrics (its scenario names its policy).
func hasStudy(results []*Results) bool {
	for _, r := range results {
		for i := range r.Metrics {
			if r.Metrics[i].Study != nil {
				return true
			}
		}
	}
	return false
}

// policyName is the run's admission policy as runs.csv writes it.
func policyName(s *engine.Scenario) string {
	if s.Policy == "" {
		return "bursar"
	}
	return s.Policy
}
