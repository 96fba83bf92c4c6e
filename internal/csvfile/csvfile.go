// Package csvfile writes the studies' CSV outputs (runs.csv, agents.csv):
// one header, rows streamed by the caller, the file replaced atomically
// (internal/atomicfile), and numbers in one format so that a notebook
// reads the same values the summaries hold (docs/analysis.md).
package csvfile

import (
	"encoding/csv"
	"io"
	"math"
	"strconv"

	"github.com/bursar-hpc/bursar/internal/atomicfile"
)

// Cell is x as a CSV cell: the shortest decimal that reads back as x, and
// an empty cell for NaN or ±Inf (a quantity a run does not have), which
// pandas and R read as missing.
func Cell(x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return ""
	}
	return strconv.FormatFloat(x, 'g', -1, 64)
}

// Write writes header, then every row rows emits, to path atomically: a
// reader sees the old file or the whole new one, and an error from rows
// leaves the old file in place.
func Write(path string, header []string, rows func(emit func([]string) error) error) error {
	return atomicfile.WriteFunc(path, func(w io.Writer) error {
		cw := csv.NewWriter(w)
		if err := cw.Write(header); err != nil {
			return err
		}
		if err := rows(cw.Write); err != nil {
			return err
		}
		cw.Flush()
		return cw.Error()
	})
}
