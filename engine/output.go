package engine

import (
	"encoding/json"
	"strconv"
	"strings"
)

// MetricsFile is the content of metrics.json: the run's knobs and its
// metrics, indented by one space per level as the prototype's file is.
func MetricsFile(r *Result) []byte {
	b := []byte("{\n \"scenario\": {")
	for i := range Knobs {
		k := &Knobs[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, "\n  "...)
		b = strconv.AppendQuote(b, k.Name)
		b = append(b, ": "...)
		b = append(b, k.Format(&r.Scenario)...)
	}
	// A run that names its policy records it (the paper's run, which
	// names none, keeps its bytes).
	if r.Scenario.Policy != "" {
		b = append(b, ",\n  \"policy\": "...)
		b = strconv.AppendQuote(b, r.Scenario.Policy)
	}
	b = append(b, "\n },\n \"metrics\": "...)
	b = r.Metrics.AppendJSON(b, " ")
	// A degenerate scenario says so (Scenario.Warnings); a sound one
	// keeps the prototype's bytes.
	if w := r.Scenario.Warnings(); len(w) > 0 {
		b = append(b, ",\n \"warnings\": ["...)
		for i, s := range w {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, "\n  "...)
			q, _ := json.Marshal(s)
			b = append(b, q...)
		}
		b = append(b, "\n ]"...)
	}
	return append(b, "\n}\n"...)
}

// ColumnName turns a display campaign and a quantity into a CSV column
// name that pandas and R take as is (adaptive-sci, held → adaptive_sci_held).
func ColumnName(campaign, quantity string) string {
	return strings.ReplaceAll(campaign, "-", "_") + "_" + quantity
}

// SeriesCSV is the content of series.csv: one row per sample, the tick, the
// congestion multiplier, and per display group (r.Groups, in order) its
// held GPUs, bucket fill fraction, credits spent and the io (GB/s) and
// inference (tokens/s) it used in the last tick.
func SeriesCSV(r *Result) []byte {
	s := &r.Series
	var b []byte
	b = append(b, "t,multiplier"...)
	for _, g := range r.Groups {
		name := g.Name
		for _, q := range []string{"held", "fill", "spent", "io", "inference"} {
			b = append(b, ',')
			b = append(b, ColumnName(name, q)...)
		}
	}
	b = append(b, '\n')
	for i, t := range s.T {
		b = strconv.AppendInt(b, int64(t), 10)
		b = append(b, ',')
		b = FormatNumber(b, s.Multiplier[i])
		for d := range r.Groups {
			b = append(b, ',')
			b = strconv.AppendInt(b, int64(s.Held[d][i]), 10)
			for _, col := range [][]float64{s.Fill[d], s.Spent[d], s.IO[d], s.Inference[d]} {
				b = append(b, ',')
				b = FormatNumber(b, col[i])
			}
		}
		b = append(b, '\n')
	}
	return b
}
