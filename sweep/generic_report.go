package sweep

import (
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/bursar-hpc/bursar/configs"
	"github.com/bursar-hpc/bursar/engine"
	"github.com/bursar-hpc/bursar/figures"
)

// SweepFigureFile is the file name of a generic sweep's figure.
func SweepFigureFile(f figures.Format) string { return "fig_sweep." + string(f) }

// quantity is one reported number of a generic point: a pooled probe
// percentile or a scalar metric's band.
type quantity struct {
	name   string
	pooled bool
	censor float64
	at     func(gp *GenericPoint) (v float64, iv figures.Interval)
}

// genericQuantities lists what a generic sweep reports, the probe's
// pooled percentiles first, then engine.ScalarKeys.
func genericQuantities() []quantity {
	var qs []quantity
	for k, q := range ProbeQuantities {
		qs = append(qs, quantity{name: q.Name, pooled: true, censor: ProbeCensor, at: func(gp *GenericPoint) (float64, figures.Interval) {
			return gp.Probe[k].Value, gp.Probe[k].CI
		}})
	}
	for k, key := range engine.ScalarKeys {
		qs = append(qs, quantity{name: key, at: func(gp *GenericPoint) (float64, figures.Interval) {
			return gp.Metrics[k].Mean, gp.Metrics[k].CI
		}})
	}
	for k, key := range engine.StudyKeys {
		qs = append(qs, quantity{name: key, at: func(gp *GenericPoint) (float64, figures.Interval) {
			if gp.Study == nil {
				return math.NaN(), figures.Interval{Lo: math.NaN(), Hi: math.NaN()}
			}
			return gp.Study[k].Mean, gp.Study[k].CI
		}})
	}
	return qs
}

// observed reports whether q has a value at some point: a sweep with the
// probe off reports no probe percentile, and the table and figure leave
// such a quantity out rather than print a column of dashes.
func observed(q quantity, pts []GenericPoint) bool {
	for i := range pts {
		if v, _ := q.at(&pts[i]); !math.IsNaN(v) {
			return true
		}
	}
	return false
}

// sweptKnobs are the knobs swept anywhere in the plan, in first-seen
// order.
func sweptKnobs(p *configs.Plan) []*engine.Knob {
	var ks []*engine.Knob
	for i := range p.Points {
		for _, sw := range p.Points[i].Swept {
			if !slices.Contains(ks, sw.Knob) {
				ks = append(ks, sw.Knob)
			}
		}
	}
	return ks
}

// WriteGenericTable prints a generic sweep's results for the console: one
// block per reported quantity (those observed at some point), a row per
// grid point with its series and swept knobs, the estimate, its 95 %
// interval and n. A censored pooled percentile is printed as ≥ its value.
func WriteGenericTable(w io.Writer, r *Results) error {
	pts := ReduceGeneric(r)
	knobs := sweptKnobs(r.Plan)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	num := func(v float64) string {
		if math.IsNaN(v) {
			return "–"
		}
		return strconv.FormatFloat(v, 'g', 6, 64)
	}
	header := "series\t"
	for _, k := range knobs {
		header += k.Name + "\t"
	}
	for _, q := range genericQuantities() {
		if !observed(q, pts) {
			continue
		}
		what := "mean over seeds, 95 % t interval"
		if q.pooled {
			what = "pooled over seeds, 95 % bootstrap interval"
		}
		fmt.Fprintf(tw, "%s (%s)\n%s%s\t95 %% CI\tn\t\n", q.name, what, header, q.name)
		for i := range pts {
			gp := &pts[i]
			fmt.Fprintf(tw, "%s\t", gp.Point.Series)
			for _, k := range knobs {
				fmt.Fprintf(tw, "%s\t", k.Format(&gp.Point.Scenario))
			}
			v, iv := q.at(gp)
			val := num(v)
			if q.censor > 0 && v >= q.censor {
				val = "≥" + val
			}
			ci := "–"
			if !math.IsNaN(iv.Lo) && !math.IsNaN(iv.Hi) {
				ci = "[" + num(iv.Lo) + ", " + num(iv.Hi) + "]"
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t\n", val, ci, gp.N)
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

// SweepFigure is the data of a generic sweep's small multiples: every
// observed quantity against the first swept knob, one line per series and
// combination of the other swept knobs (in plan order). A plan that sweeps
// nothing is drawn against the grid point's index.
func SweepFigure(r *Results) figures.SweepData {
	p := r.Plan
	pts := ReduceGeneric(r)
	knobs := sweptKnobs(p)
	d := figures.SweepData{Title: p.Experiment + ": every metric against the swept knob, 95 % intervals over seeds " + seedNote(p)}
	x := func(i int) float64 { return float64(i) }
	var others []*engine.Knob
	if len(knobs) > 0 {
		xk := knobs[0]
		d.XLabel = xk.Name
		x = func(i int) float64 { return xk.Get(&p.Points[i].Scenario) }
		others = knobs[1:]
	} else {
		d.XLabel = "grid point"
	}
	// The lines: series plus the other swept knobs' values.
	lineOf := make([]int, len(pts))
	for i := range pts {
		pt := &p.Points[i]
		parts := []string{pt.Series}
		for _, k := range others {
			parts = append(parts, k.Name+"="+k.Format(&pt.Scenario))
		}
		name := strings.Join(parts, ", ")
		j := slices.Index(d.Series, name)
		if j < 0 {
			j = len(d.Series)
			d.Series = append(d.Series, name)
		}
		lineOf[i] = j
	}
	for _, q := range genericQuantities() {
		if !observed(q, pts) {
			continue
		}
		sp := figures.SweepPanel{Metric: q.name, Lines: make([]figures.SweepLine, len(d.Series))}
		if q.pooled {
			sp.Censor = q.censor
		}
		for i := range pts {
			v, iv := q.at(&pts[i])
			l := &sp.Lines[lineOf[i]]
			l.Xs, l.Ys, l.CI = append(l.Xs, x(i)), append(l.Ys, v), append(l.CI, iv)
		}
		d.Panels = append(d.Panels, sp)
	}
	return d
}

func seedNote(p *configs.Plan) string {
	if len(p.Seeds) == 1 {
		return "(one seed: no intervals)"
	}
	return "(n = " + strconv.Itoa(len(p.Seeds)) + " seeds)"
}

// WriteSweepFigure draws a generic sweep's small multiples into dir.
func WriteSweepFigure(dir string, f figures.Format, r *Results) error {
	path := filepath.Join(dir, SweepFigureFile(f))
	if err := figures.WriteSweep(path, f, SweepFigure(r)); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
