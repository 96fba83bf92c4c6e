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

	"github.com/bursar-hpc/bursar/engine"
	"github.com/bursar-hpc/bursar/figures"
)

// PoliciesFigureFile is the file name of the comparison figure.
func PoliciesFigureFile(f figures.Format) string { return "fig_policies." + string(f) }

// CompareMetric is one headline metric of the comparison (docs/studies.md §5):
// the panel's title and unit, and the run metrics it draws (one estimate
// per key and policy).
type CompareMetric struct {
	Title, Unit string
	Keys        []string
	// Names label the keys in the panel's legend when there are several.
	Names []string
	// Log draws the panel on a log scale.
	Log bool
	// Floor and Ceil are the range the metric cannot leave (the figure
	// clips an interval there); both zero: none.
	Floor, Ceil float64
}

// Ranges of the comparison's metrics (docs/metrics.md): latencies, counts
// and GPU-seconds are at least 0, a fraction of the pool and Jain's index
// at most 1.
var (
	nonNegative = [2]float64{0, math.Inf(1)}
	fraction    = [2]float64{0, 1}
)

// CompareMetrics are the comparison's headline metrics, in panel and
// column order: the victim's isolation (with its unserved requests at
// their censored latency, §6.3), the storm's excess over R, utilization,
// science per credit, fairness, and what preemption cost.
var CompareMetrics = []CompareMetric{
	// The victim's p95 spans 1 s to minutes: a log axis keeps 1 s and 61 s apart.
	{Title: "victim p95 in storm (censored, log scale)", Unit: "s", Keys: []string{"victim_p95_in_censored"}, Log: true, Floor: nonNegative[0], Ceil: nonNegative[1]},
	{Title: "victim violations in storm (> 60 s)", Unit: "requests", Keys: []string{"victim_violations_in_censored"}, Floor: nonNegative[0], Ceil: nonNegative[1]},
	{Title: "storm GPU-s above R in its window", Unit: "GPU-s", Keys: []string{"storm_excess_gpu_s"}, Floor: nonNegative[0], Ceil: nonNegative[1]},
	{Title: "utilization", Unit: "fraction of the pool", Keys: []string{"utilization"}, Floor: fraction[0], Ceil: fraction[1]},
	// Within a factor of five since static prices its leases like the
	// others: a linear axis from 0 compares the sizes.
	{Title: "science per credit", Unit: "value / credit", Keys: []string{"adaptive_science_per_credit", "naive_science_per_credit"}, Names: []string{"adaptive", "naive"}, Floor: nonNegative[0], Ceil: nonNegative[1]},
	{Title: "Jain's index of usage ÷ share, storm window", Unit: "index", Keys: []string{"jain_storm"}, Floor: fraction[0], Ceil: fraction[1]},
	{Title: "preemptions", Unit: "leases", Keys: []string{"preemptions"}, Floor: nonNegative[0], Ceil: nonNegative[1]},
	{Title: "preempted GPU-s (lost)", Unit: "GPU-s", Keys: []string{"preempted_gpu_s"}, Floor: nonNegative[0], Ceil: nonNegative[1]},
}

// metricBand finds a point's band of a run metric, scalar or study.
func metricBand(gp *GenericPoint, key string) (figures.Band, bool) {
	if i := slices.Index(engine.ScalarKeys, key); i >= 0 {
		return gp.Metrics[i], true
	}
	if i := slices.Index(engine.StudyKeys, key); i >= 0 && gp.Study != nil {
		return gp.Study[i], true
	}
	nan := math.NaN()
	return figures.Band{Mean: nan, Min: nan, Max: nan, CI: figures.Interval{Lo: nan, Hi: nan}}, false
}

// comparePolicies names the grid points: their series (one per policy in
// configs/compare.yaml), with the point's other swept knobs if any.
func comparePolicies(r *Results) []string {
	names := make([]string, len(r.Plan.Points))
	for i := range r.Plan.Points {
		pt := &r.Plan.Points[i]
		parts := []string{pt.Series}
		for _, sw := range pt.Swept {
			parts = append(parts, sw.Knob.Name+"="+sw.Knob.Format(&pt.Scenario))
		}
		names[i] = strings.Join(parts, ",")
	}
	return names
}

// PoliciesFigure is the data of fig_policies: one panel per CompareMetric,
// one x position per grid point (policy), the means over seeds with their
// 95 % t intervals.
func PoliciesFigure(r *Results) figures.PoliciesData {
	pts := ReduceGeneric(r)
	d := figures.PoliciesData{
		Title:    "What Bursar buys: the paper's agent scenario under every policy " + seedNote(r.Plan),
		Policies: comparePolicies(r),
	}
	for _, cm := range CompareMetrics {
		pn := figures.PoliciesPanel{Title: cm.Title, YLabel: cm.Unit, Log: cm.Log, Floor: cm.Floor, Ceil: cm.Ceil}
		for k, key := range cm.Keys {
			s := figures.PoliciesSeries{Name: key}
			if k < len(cm.Names) {
				s.Name = cm.Names[k]
			}
			for i := range pts {
				b, _ := metricBand(&pts[i], key)
				s.Ys, s.CI = append(s.Ys, b.Mean), append(s.CI, b.CI)
			}
			pn.Series = append(pn.Series, s)
		}
		d.Panels = append(d.Panels, pn)
	}
	return d
}

// WritePoliciesFigure draws fig_policies into dir.
func WritePoliciesFigure(dir string, f figures.Format, r *Results) error {
	path := filepath.Join(dir, PoliciesFigureFile(f))
	if err := figures.WritePolicies(path, f, PoliciesFigure(r)); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// WriteCompareTable prints the comparison: a row per policy, a column per
// headline metric key, each the mean over seeds and its 95 % t interval,
// and n.
func WriteCompareTable(w io.Writer, r *Results) error {
	pts := ReduceGeneric(r)
	names := comparePolicies(r)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	num := func(v float64) string {
		if math.IsNaN(v) {
			return "–"
		}
		a := math.Abs(v)
		switch {
		case a >= 1000:
			return strconv.FormatFloat(v, 'f', 0, 64)
		case a >= 10:
			return strconv.FormatFloat(v, 'f', 1, 64)
		}
		return strconv.FormatFloat(v, 'f', 3, 64)
	}
	fmt.Fprintf(tw, "%s: mean over seeds [95 %% t interval]\n", r.Plan.Experiment)
	fmt.Fprint(tw, "policy\tn\t")
	for _, cm := range CompareMetrics {
		for _, key := range cm.Keys {
			fmt.Fprintf(tw, "%s\t", key)
		}
	}
	fmt.Fprintln(tw)
	for i := range pts {
		fmt.Fprintf(tw, "%s\t%d\t", names[i], pts[i].N)
		for _, cm := range CompareMetrics {
			for _, key := range cm.Keys {
				b, _ := metricBand(&pts[i], key)
				cell := num(b.Mean)
				if !math.IsNaN(b.CI.Lo) && !math.IsNaN(b.CI.Hi) {
					cell += " [" + num(b.CI.Lo) + ", " + num(b.CI.Hi) + "]"
				}
				fmt.Fprintf(tw, "%s\t", cell)
			}
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(r.Plan.Points) == 0 {
		return nil
	}
	policies := make([]string, len(r.Plan.Points))
	for i := range r.Plan.Points {
		policies[i] = r.Plan.Points[i].Scenario.Policy
	}
	for _, line := range r.Plan.Points[0].Scenario.Registry().Key(policies) {
		if _, err := fmt.Fprintln(w, line); err != nil {
			return err
		}
	}
	return nil
}
