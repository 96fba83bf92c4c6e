package sweep

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"text/tabwriter"

	"github.com/bursar-hpc/bursar/configs"
	"github.com/bursar-hpc/bursar/engine"
	"github.com/bursar-hpc/bursar/figures"
)

// The paper's experiments (configs.Experiments) and the series their
// reductions read.
const (
	LatencyPrice = "latency-price"
	Overbooking  = "overbooking"
	Bucket       = "bucket"
)

// bucketSeries are the bucket experiment's series, in summary order.
var bucketSeries = []string{"contended", "idle-prepaid", "idle-leaky"}

// Number is a summary value: written as engine.FormatNumber does (shortest
// digits, no exponent), NaN as null.
type Number float64

// MarshalJSON writes the number, or null for NaN.
func (n Number) MarshalJSON() ([]byte, error) { return engine.FormatNumber(nil, float64(n)), nil }

// The summary.json rows: the keys of experiments.md, each estimate
// followed by its 95 % interval (_lo, _hi: a t interval for a mean over
// seeds, a seeded bootstrap over seeds for a pooled percentile), and per
// row n, the number of seeds. A pooled probe percentile also carries
// _censored (true when it sits at the probe's 591 s censor and is only a
// lower bound, as is then its upper bound) and probe_n / probe_n_in, the
// number of pooled observations.
type (
	HeadroomRow struct {
		Headroom      Number `json:"headroom"`
		Utilization   Number `json:"utilization"`
		UtilizationLo Number `json:"utilization_lo"`
		UtilizationHi Number `json:"utilization_hi"`
		ProbeP50Cols
	}
	GraceRow struct {
		Grace Number `json:"grace"`
		ProbeP50Cols
	}
	// ProbeP50Cols are the probe's pooled p50 with its interval, whether
	// it is censored, the latencies pooled and the seeds: the columns a
	// headroom row and a grace row end with (encoding/json writes an
	// embedded struct's fields in its place).
	ProbeP50Cols struct {
		ProbeP50         Number `json:"probe_p50"`
		ProbeP50Lo       Number `json:"probe_p50_lo"`
		ProbeP50Hi       Number `json:"probe_p50_hi"`
		ProbeP50Censored bool   `json:"probe_p50_censored"`
		ProbeN           int    `json:"probe_n"`
		N                int    `json:"n"`
	}
	OverbookingRow struct {
		NStorms            int    `json:"n_storms"`
		Phi                Number `json:"phi"`
		VictimP95In        Number `json:"victim_p95_in"`
		VictimP95InLo      Number `json:"victim_p95_in_lo"`
		VictimP95InHi      Number `json:"victim_p95_in_hi"`
		VictimViolations   Number `json:"victim_violations"`
		VictimViolationsLo Number `json:"victim_violations_lo"`
		VictimViolationsHi Number `json:"victim_violations_hi"`
		ProbeP50In         Number `json:"probe_p50_in"`
		ProbeP50InLo       Number `json:"probe_p50_in_lo"`
		ProbeP50InHi       Number `json:"probe_p50_in_hi"`
		ProbeP50InCensored bool   `json:"probe_p50_in_censored"`
		ProbeNIn           int    `json:"probe_n_in"`
		N                  int    `json:"n"`
	}
	BucketRow struct {
		StormB              Number `json:"storm_B"`
		ExcessContended     Number `json:"excess_contended"`
		ExcessContendedLo   Number `json:"excess_contended_lo"`
		ExcessContendedHi   Number `json:"excess_contended_hi"`
		ExcessIdlePrepaid   Number `json:"excess_idle_prepaid"`
		ExcessIdlePrepaidLo Number `json:"excess_idle_prepaid_lo"`
		ExcessIdlePrepaidHi Number `json:"excess_idle_prepaid_hi"`
		ExcessIdleLeaky     Number `json:"excess_idle_leaky"`
		ExcessIdleLeakyLo   Number `json:"excess_idle_leaky_lo"`
		ExcessIdleLeakyHi   Number `json:"excess_idle_leaky_hi"`
		N                   int    `json:"n"`
	}
)

// BootstrapRow records the resampling behind one experiment's bootstrap
// intervals (its config's configs.Bootstrap): with it, and the stream
// naming of Stream, every _lo and _hi of a pooled percentile can be
// recomputed bit for bit from runs.csv and latencies.json alone.
type BootstrapRow struct {
	Experiment string `json:"experiment"`
	Seed       uint64 `json:"seed"`
	Resamples  int    `json:"resamples"`
}

// Summary is summary.json: the keys of the experiments that ran (every
// experiment has at least one grid point, so an absent key means the
// experiment did not run), and the bootstrap of each, in the order they
// ran.
type Summary struct {
	Headroom    []HeadroomRow    `json:"headroom,omitempty"`
	Grace       []GraceRow       `json:"grace,omitempty"`
	Overbooking []OverbookingRow `json:"overbooking,omitempty"`
	Bucket      []BucketRow      `json:"bucket,omitempty"`
	Bootstrap   []BootstrapRow   `json:"bootstrap,omitempty"`
}

// JSON is the content of summary.json.
func (s *Summary) JSON() []byte {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		// Only Number marshals itself, and it cannot fail.
		panic(err)
	}
	return append(b, '\n')
}

// Paper is the reduction of the paper's experiments: the summary and the
// data of each figure (nil when that experiment did not run).
type Paper struct {
	Summary      Summary
	LatencyPrice *figures.LatencyPriceData
	Overbooking  *figures.OverbookingData
	Bucket       *figures.BucketData
}

// seriesAxis finds the points of series name, each of which must sweep
// knob alone; it returns their indices in plan order.
func seriesAxis(p *configs.Plan, name, knob string) ([]int, error) {
	var idx []int
	for i := range p.Points {
		pt := &p.Points[i]
		if pt.Series != name {
			continue
		}
		if len(pt.Swept) != 1 || pt.Swept[0].Knob.Name != knob {
			return nil, fmt.Errorf("%s: %s needs series %q to sweep %s alone, but it sweeps %s", p.File, p.Experiment, name, knob, sweptNames(pt))
		}
		idx = append(idx, i)
	}
	if idx == nil {
		return nil, fmt.Errorf("%s: %s needs a series %q sweeping %s", p.File, p.Experiment, name, knob)
	}
	return idx, nil
}

func sweptNames(pt *configs.Point) string {
	if len(pt.Swept) == 0 {
		return "nothing"
	}
	s := ""
	for i, sw := range pt.Swept {
		if i > 0 {
			s += " and "
		}
		s += sw.Knob.Name
	}
	return s
}

// paperShape checks that a plan has the series its experiment's reduction
// reads, and returns them: latency-price reads series headroom and grace,
// overbooking one series sweeping storms, bucket the three enforcement
// series over the same storm_bucket values.
func paperShape(p *configs.Plan) ([][]int, error) {
	switch p.Experiment {
	case LatencyPrice:
		h, err := seriesAxis(p, "headroom", "headroom")
		if err != nil {
			return nil, err
		}
		g, err := seriesAxis(p, "grace", "grace")
		return [][]int{h, g}, err
	case Overbooking:
		names := map[string]bool{}
		for i := range p.Points {
			names[p.Points[i].Series] = true
		}
		if len(names) != 1 {
			return nil, fmt.Errorf("%s: overbooking needs exactly one series, sweeping storms; it has %d", p.File, len(names))
		}
		o, err := seriesAxis(p, p.Points[0].Series, "storms")
		return [][]int{o}, err
	case Bucket:
		var out [][]int
		for _, name := range bucketSeries {
			idx, err := seriesAxis(p, name, "storm_bucket")
			if err != nil {
				return nil, err
			}
			out = append(out, idx)
		}
		for si := 1; si < len(out); si++ {
			if !slices.EqualFunc(out[0], out[si], func(a, b int) bool {
				return p.Points[a].Swept[0].Value == p.Points[b].Swept[0].Value
			}) {
				return nil, fmt.Errorf("%s: bucket needs the series %s to sweep the same storm_bucket values", p.File, bucketSeries)
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("%s: %q is not a paper experiment (want %s, %s or %s; use `bursar-sweep sweep` for any other grid)", p.File, p.Experiment, LatencyPrice, Overbooking, Bucket)
}

// CheckPaperPlan tells, before anything runs, whether a plan has the shape
// its experiment's reduction needs (a --config may change values, fixed
// knobs and seeds, but not the series the figures read).
func CheckPaperPlan(p *configs.Plan) error {
	_, err := paperShape(p)
	return err
}

// ReducePaper reduces the results of paper experiments (any of them, each
// at most once) into the summary and the figures' data.
func ReducePaper(results []*Results) (*Paper, error) {
	out := &Paper{}
	seen := map[string]bool{}
	for _, r := range results {
		p := r.Plan
		if seen[p.Experiment] {
			return nil, fmt.Errorf("experiment %s given twice", p.Experiment)
		}
		seen[p.Experiment] = true
		shape, err := paperShape(p)
		if err != nil {
			return nil, err
		}
		out.Summary.Bootstrap = append(out.Summary.Bootstrap, BootstrapRow{p.Experiment, p.Bootstrap.Seed, p.Bootstrap.Resamples})
		switch p.Experiment {
		case LatencyPrice:
			out.LatencyPrice = reduceLatencyPrice(r, shape[0], shape[1], &out.Summary)
		case Overbooking:
			out.Overbooking = reduceOverbooking(r, shape[0], &out.Summary)
		case Bucket:
			out.Bucket = reduceBucket(r, shape, &out.Summary)
		}
	}
	return out, nil
}

// pooledCI is PooledCI over the point's lists with the plan's bootstrap.
func (r *Results) pooledCI(lists [][]int, p float64, point int, quantity string) figures.Interval {
	return PooledCI(lists, p, r.Plan.Bootstrap, Stream{Experiment: r.Plan.Experiment, Point: point, Quantity: quantity})
}

func reduceLatencyPrice(r *Results, headroom, grace []int, sum *Summary) *figures.LatencyPriceData {
	d := &figures.LatencyPriceData{Censor: ProbeCensor}
	for _, i := range headroom {
		ms := r.seedsOf(i)
		lats := probeLats(ms)
		hp := figures.HeadroomPoint{
			Headroom:    r.Plan.Points[i].Swept[0].Value,
			Utilization: bandCI(scalars(ms, "utilization")),
			ProbeP50:    Pooled(lats, 50),
			ProbeP95:    Pooled(lats, 95),
			ProbeP50CI:  r.pooledCI(lats, 50, i, "probe_p50"),
			ProbeP95CI:  r.pooledCI(lats, 95, i, "probe_p95"),
		}
		d.Headroom = append(d.Headroom, hp)
		sum.Headroom = append(sum.Headroom, HeadroomRow{
			Headroom:    Number(hp.Headroom),
			Utilization: Number(hp.Utilization.Mean), UtilizationLo: Number(hp.Utilization.CI.Lo), UtilizationHi: Number(hp.Utilization.CI.Hi),
			ProbeP50Cols: probeP50Cols(hp.ProbeP50, hp.ProbeP50CI, lats, len(ms)),
		})
	}
	for _, i := range grace {
		ms := r.seedsOf(i)
		lats := probeLats(ms)
		gp := figures.GracePoint{Grace: r.Plan.Points[i].Swept[0].Value, ProbeP50: Pooled(lats, 50), ProbeP50CI: r.pooledCI(lats, 50, i, "probe_p50")}
		d.Grace = append(d.Grace, gp)
		sum.Grace = append(sum.Grace, GraceRow{
			Grace:        Number(gp.Grace),
			ProbeP50Cols: probeP50Cols(gp.ProbeP50, gp.ProbeP50CI, lats, len(ms)),
		})
	}
	return d
}

// probeP50Cols are the p50 columns of a point whose pooled latencies are
// lats over n seeds.
func probeP50Cols(p50 float64, ci figures.Interval, lats [][]int, n int) ProbeP50Cols {
	return ProbeP50Cols{ProbeP50: Number(p50), ProbeP50Lo: Number(ci.Lo), ProbeP50Hi: Number(ci.Hi),
		ProbeP50Censored: Censored(p50), ProbeN: pooledCount(lats), N: n}
}

// ProbeCensor is the probe's censored latency: it gives up once t − t0
// exceeds 590 s (model.md §7), recording 591.
const ProbeCensor = engine.ProbeCensor

// VictimBound is the latency above which a victim grant is a violation
// (model.md §8, victim_violations_in).
const VictimBound = 60

func reduceOverbooking(r *Results, points []int, sum *Summary) *figures.OverbookingData {
	d := &figures.OverbookingData{VictimBound: VictimBound, Censor: ProbeCensor}
	for _, i := range points {
		ms := r.seedsOf(i)
		sc := &r.Plan.Points[i].Scenario
		lats := probeLatsIn(ms)
		op := figures.OverbookingPoint{
			Storms:       sc.Storms,
			Phi:          Phi(sc),
			ProbeP50In:   Pooled(lats, 50),
			ProbeP95In:   Pooled(lats, 95),
			ProbeP50InCI: r.pooledCI(lats, 50, i, "probe_p50_in"),
			ProbeP95InCI: r.pooledCI(lats, 95, i, "probe_p95_in"),
			VictimP95In:  bandCI(scalars(ms, "victim_p95_in")),
		}
		for j := range ms {
			d.Violations += ms[j].VictimViolationsIn
		}
		viol := bandCI(scalars(ms, "victim_violations_in"))
		d.Points = append(d.Points, op)
		sum.Overbooking = append(sum.Overbooking, OverbookingRow{
			NStorms: op.Storms, Phi: Number(op.Phi),
			VictimP95In: Number(op.VictimP95In.Mean), VictimP95InLo: Number(op.VictimP95In.CI.Lo), VictimP95InHi: Number(op.VictimP95In.CI.Hi),
			VictimViolations: Number(viol.Mean), VictimViolationsLo: Number(viol.CI.Lo), VictimViolationsHi: Number(viol.CI.Hi),
			ProbeP50In: Number(op.ProbeP50In), ProbeP50InLo: Number(op.ProbeP50InCI.Lo), ProbeP50InHi: Number(op.ProbeP50InCI.Hi),
			ProbeP50InCensored: Censored(op.ProbeP50In), ProbeNIn: pooledCount(lats), N: len(ms),
		})
	}
	return d
}

func reduceBucket(r *Results, series [][]int, sum *Summary) *figures.BucketData {
	first := &r.Plan.Points[series[0][0]].Scenario
	d := &figures.BucketData{StormRate: first.StormRate, Window: float64(first.StormEnd - first.StormStart)}
	for k, i := range series[0] {
		ex := func(s int) figures.Band { return bandCI(scalars(r.seedsOf(series[s][k]), "storm_excess_gpu_s")) }
		bp := figures.BucketPoint{StormBucket: r.Plan.Points[i].Swept[0].Value, Contended: ex(0), IdlePrepaid: ex(1), IdleLeaky: ex(2)}
		d.Points = append(d.Points, bp)
		sum.Bucket = append(sum.Bucket, BucketRow{
			StormB:          Number(bp.StormBucket),
			ExcessContended: Number(bp.Contended.Mean), ExcessContendedLo: Number(bp.Contended.CI.Lo), ExcessContendedHi: Number(bp.Contended.CI.Hi),
			ExcessIdlePrepaid: Number(bp.IdlePrepaid.Mean), ExcessIdlePrepaidLo: Number(bp.IdlePrepaid.CI.Lo), ExcessIdlePrepaidHi: Number(bp.IdlePrepaid.CI.Hi),
			ExcessIdleLeaky: Number(bp.IdleLeaky.Mean), ExcessIdleLeakyLo: Number(bp.IdleLeaky.CI.Lo), ExcessIdleLeakyHi: Number(bp.IdleLeaky.CI.Hi),
			N: len(r.seedsOf(i)),
		})
	}
	return d
}

// FigureFile is the file name of an experiment's figure.
func FigureFile(experiment string, f figures.Format) string {
	switch experiment {
	case LatencyPrice:
		return "fig_latency_price." + string(f)
	case Overbooking:
		return "fig_overbooking." + string(f)
	case Bucket:
		return "fig_bucket." + string(f)
	}
	return ""
}

// WriteFigures draws the figure of every experiment reduced into dir, all
// at once (drawing is CPU-bound and the figures are independent). Each one
// is tried, so one failing figure does not cost the others, and every
// failure is returned, in experiment order.
func (p *Paper) WriteFigures(dir string, f figures.Format) error {
	var draws []func() error
	add := func(experiment string, draw func(path string) error) {
		path := filepath.Join(dir, FigureFile(experiment, f))
		draws = append(draws, func() error {
			if err := draw(path); err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			return nil
		})
	}
	if p.LatencyPrice != nil {
		add(LatencyPrice, func(path string) error { return figures.WriteLatencyPrice(path, f, *p.LatencyPrice) })
	}
	if p.Overbooking != nil {
		add(Overbooking, func(path string) error { return figures.WriteOverbooking(path, f, *p.Overbooking) })
	}
	if p.Bucket != nil {
		add(Bucket, func(path string) error { return figures.WriteBucket(path, f, *p.Bucket) })
	}
	errs := make([]error, len(draws))
	var wg sync.WaitGroup
	for i, draw := range draws {
		wg.Go(func() { errs[i] = draw() })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// WriteTables prints the summary's tables, one per key, for the console.
func (p *Paper) WriteTables(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	num := func(v Number, digits int) string {
		if math.IsNaN(float64(v)) {
			return "–"
		}
		return strconv.FormatFloat(float64(v), 'f', digits, 64)
	}
	s := &p.Summary
	section := func(title, header string) {
		fmt.Fprintf(tw, "%s\n%s\n", title, header)
	}
	// An interval as "[lo, hi]", "–" when undefined (one seed).
	ci := func(lo, hi Number, digits int) string {
		if math.IsNaN(float64(lo)) || math.IsNaN(float64(hi)) {
			return "–"
		}
		return "[" + num(lo, digits) + ", " + num(hi, digits) + "]"
	}
	// A censored percentile is a lower bound.
	cens := func(v Number, censored bool) string {
		if censored {
			return "≥" + num(v, 0)
		}
		return num(v, 0)
	}
	if s.Headroom != nil {
		section("latency-price: backfill headroom (utilization = mean over seeds, probe p50 = pooled, s; 95 % intervals)", "headroom\tutilization %\t95 % CI\tprobe p50\t95 % CI\tn\t")
		for _, r := range s.Headroom {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t\n", num(r.Headroom, 0), num(r.Utilization*100, 1), ci(r.UtilizationLo*100, r.UtilizationHi*100, 1),
				cens(r.ProbeP50, r.ProbeP50Censored), ci(r.ProbeP50Lo, r.ProbeP50Hi, 0), r.N)
		}
		fmt.Fprintln(tw)
	}
	if s.Grace != nil {
		section("latency-price: preemption grace (probe p50 = pooled, s; 95 % interval)", "grace\tprobe p50\t95 % CI\tp50 − grace\tn\t")
		for _, r := range s.Grace {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t\n", num(r.Grace, 0), cens(r.ProbeP50, r.ProbeP50Censored), ci(r.ProbeP50Lo, r.ProbeP50Hi, 0), num(r.ProbeP50-r.Grace, 0), r.N)
		}
		fmt.Fprintln(tw)
	}
	if s.Overbooking != nil {
		section("overbooking: storms sharing the window (victim = mean over seeds, probe in-window p50 = pooled, s; 95 % intervals)", "storms\tφ\tvictim p95 in\t95 % CI\tviolations\tprobe p50 in\t95 % CI\tn\t")
		for _, r := range s.Overbooking {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t\n", r.NStorms, num(r.Phi, 2), num(r.VictimP95In, 1), ci(r.VictimP95InLo, r.VictimP95InHi, 1),
				num(r.VictimViolations, 2), cens(r.ProbeP50In, r.ProbeP50InCensored), ci(r.ProbeP50InLo, r.ProbeP50InHi, 0), r.N)
		}
		fmt.Fprintln(tw)
	}
	if s.Bucket != nil {
		section("bucket: storm excess GPU-s above R × storms (mean over seeds; 95 % t intervals)", "storm B\tcontended\t95 % CI\tidle prepaid\t95 % CI\tidle leaky\t95 % CI\tn\t")
		for _, r := range s.Bucket {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t\n", num(r.StormB, 0), num(r.ExcessContended, 0), ci(r.ExcessContendedLo, r.ExcessContendedHi, 0),
				num(r.ExcessIdlePrepaid, 0), ci(r.ExcessIdlePrepaidLo, r.ExcessIdlePrepaidHi, 0),
				num(r.ExcessIdleLeaky, 0), ci(r.ExcessIdleLeakyLo, r.ExcessIdleLeakyHi, 0), r.N)
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}
