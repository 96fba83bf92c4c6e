package slurmcheck

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"text/tabwriter"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/bursar-hpc/bursar/internal/atomicfile"
)

// Config is a validation: the log, the settings both sides run with, the
// cluster and the number of real replays.
type Config struct {
	Log      LogSpec  `json:"log"`
	Settings Settings `json:"settings"`
	// Scheduler is the slurm.conf lines both sides read: slurmctld (added
	// to the cluster's slurm.conf) and the simulator (policy slurm's
	// knobs as siteconf/slurmconf reads them). Empty: Settings.Conf().
	Scheduler SchedulerConf `json:"scheduler"`
	Runs      int           `json:"runs"`
	// Parallel is how many real replays run at once, each on its own
	// cluster (ports apart): fewer minutes, more load on the machine,
	// which the spread then includes.
	Parallel int     `json:"parallel"`
	Cluster  Cluster `json:"-"`
}

// Validate checks the config; the error names the field.
func (c Config) Validate() error {
	if err := c.Log.Validate(); err != nil {
		return err
	}
	if err := c.Settings.Validate(); err != nil {
		return err
	}
	if c.Runs < 2 {
		return fmt.Errorf("slurmcheck: runs must be at least 2 (the spread needs two), got %d", c.Runs)
	}
	if _, err := c.Knobs(); err != nil {
		return err
	}
	if c.Settings.Nodes != c.Log.Nodes {
		return fmt.Errorf("slurmcheck: the log is drawn for %d nodes, the cluster has %d", c.Log.Nodes, c.Settings.Nodes)
	}
	if c.Scheduler.Text == "" && c.Settings.JobTest < c.Log.Jobs {
		return fmt.Errorf("slurmcheck: bf_max_job_test %d is below the job count %d: the passes would stop short", c.Settings.JobTest, c.Log.Jobs)
	}
	return nil
}

// Result is a validation's outcome: the log, every real replay, each
// predictor's times for it, and the agreements.
type Result struct {
	Config      Config       `json:"config"`
	Jobs        []Job        `json:"jobs"`
	Load        float64      `json:"offered_load"`
	Replays     [][]Observed `json:"-"`
	Predictions [][][]Times  `json:"-"` // [replay][predictor]
	Agreement   []Named      `json:"agreement"`
	PerReplay   [][]Named    `json:"per_replay"`
	Verdict     Verdict      `json:"verdict"`
	WallSeconds float64      `json:"wall_s"`
	ReplayWall  []float64    `json:"replay_wall_s"`
	started     time.Time
}

// Named is one predictor's agreement with the real replays, pooled.
type Named struct {
	Predictor string    `json:"predictor"`
	Agreement Agreement `json:"agreement"`
}

// Predictors are the simulated predictors, in report order, and Spread
// the name of Slurm against itself (each real replay predicting each
// later one).
var Predictors = []string{PredictSlurm, PredictFifo}

// Spread names Slurm's own run-to-run agreement.
const Spread = "slurm-vs-slurm"

// Verdict is issue 30's test: policy slurm's mean start-time error within
// twice Slurm's own run-to-run spread, clearly below fifo's (at most
// half), and τ-b at least 0.9.
type Verdict struct {
	WithinTwiceSpread bool `json:"within_twice_spread"`
	BelowHalfFifo     bool `json:"below_half_fifo"`
	TauAtLeast09      bool `json:"tau_b_at_least_0_9"`
	Pass              bool `json:"pass"`
}

// Run draws the log, replays it cfg.Runs times through the real cluster
// and under each predictor, and measures them.
func Run(ctx context.Context, cfg Config, progress io.Writer) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.Scheduler = cfg.scheduler() // summary.json names the file both sides read
	r := &Result{Config: cfg, Jobs: Generate(cfg.Log), started: time.Now()}
	r.Load = OfferedLoad(r.Jobs, cfg.Log.Nodes)
	last := r.Jobs[len(r.Jobs)-1].Submit
	fmt.Fprintf(progress, "validate-slurm: %d jobs on %d nodes over %.0f s (offered load %.2f), %d real replays\n",
		len(r.Jobs), cfg.Log.Nodes, last, r.Load, cfg.Runs)
	r.Replays = make([][]Observed, cfg.Runs)
	r.ReplayWall = make([]float64, cfg.Runs)
	// Replays at once run on clusters of their own ports (each cluster
	// takes slurmctld's and one per node).
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(1, cfg.Parallel))
	for k := range cfg.Runs {
		g.Go(func() error {
			c := cfg.Cluster
			stride := cfg.Settings.Nodes + 2
			c.CtldPort += k % max(1, cfg.Parallel) * stride
			c.SlurmdPort += k % max(1, cfg.Parallel) * stride
			t := time.Now()
			obs, err := c.Replay(gctx, fmt.Sprintf("replay-%d", k+1), cfg.Settings.Nodes, cfg.scheduler().Text, r.Jobs, progress)
			r.Replays[k], r.ReplayWall[k] = obs, time.Since(t).Seconds()
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	if err := r.analyze(); err != nil {
		return nil, err
	}
	r.WallSeconds = time.Since(r.started).Seconds()
	return r, nil
}

// FromState measures the real replays a validation with cfg left in
// dir (its --state-dir) again, without running them: for a change of
// the simulator.
func FromState(cfg Config, dir string) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.Scheduler = cfg.scheduler() // summary.json names the file both sides read
	r := &Result{Config: cfg, Jobs: Generate(cfg.Log), started: time.Now()}
	r.Load = OfferedLoad(r.Jobs, cfg.Log.Nodes)
	for k := range cfg.Runs {
		obs, err := ReadReplay(filepath.Join(dir, fmt.Sprintf("replay-%d", k+1)), r.Jobs)
		if err != nil {
			return nil, err
		}
		r.Replays = append(r.Replays, obs)
	}
	if err := r.analyze(); err != nil {
		return nil, err
	}
	r.WallSeconds = time.Since(r.started).Seconds()
	return r, nil
}

// analyze simulates every real replay under each predictor and measures
// them.
func (r *Result) analyze() error {
	r.Predictions = nil
	knobs, err := r.Config.Knobs()
	if err != nil {
		return err
	}
	for _, obs := range r.Replays {
		var preds [][]Times
		for _, p := range Predictors {
			ts, err := Simulate(p, knobs, r.Config.Settings.Nodes, r.Jobs, OnCycles(obs))
			if err != nil {
				return err
			}
			preds = append(preds, ts)
		}
		r.Predictions = append(r.Predictions, preds)
	}
	r.measure()
	return nil
}

// measure pools the agreements: each predictor against every replay, and
// every pair of replays (the earlier one the reference).
func (r *Result) measure() {
	r.Agreement, r.PerReplay = nil, nil
	pooled := make([]Agreement, len(Predictors))
	for k, obs := range r.Replays {
		var per []Named
		for p := range Predictors {
			pooled[p].Add(Real(OnCycles(obs)), r.Predictions[k][p])
			per = append(per, Named{Predictors[p], Compare(Real(OnCycles(obs)), r.Predictions[k][p])})
		}
		r.PerReplay = append(r.PerReplay, per)
	}
	for p, name := range Predictors {
		r.Agreement = append(r.Agreement, Named{name, pooled[p]})
	}
	var spread Agreement
	for a := range r.Replays {
		for b := a + 1; b < len(r.Replays); b++ {
			spread.Add(Real(OnCycles(r.Replays[a])), Real(OnCycles(r.Replays[b])))
		}
	}
	r.Agreement = append(r.Agreement, Named{Spread, spread})
	sim, fifo := r.Agreement[0].Agreement, r.Agreement[1].Agreement
	r.Verdict = Verdict{
		WithinTwiceSpread: sim.MAE <= 2*spread.MAE,
		BelowHalfFifo:     sim.MAE <= fifo.MAE/2,
		TauAtLeast09:      sim.TauB >= 0.9,
	}
	r.Verdict.Pass = r.Verdict.WithinTwiceSpread && r.Verdict.BelowHalfFifo && r.Verdict.TauAtLeast09
}

// The files Write makes, in the manifest's order.
const (
	SummaryFile = "summary.json"
	JobsFile    = "jobs.csv"
	ConfFile    = "slurm-scheduler.conf"
)

// Files are Write's outputs.
var Files = []string{SummaryFile, JobsFile, ConfFile}

// Write writes summary.json, jobs.csv (one row per job per real replay:
// the log's job; what Slurm recorded, in jobcomp's whole seconds and in
// slurmctld's log's milliseconds from the epoch; the job on Slurm's
// cycles; each predictor's start cycle and error) and the
// scheduler's slurm.conf lines into dir, each atomically.
func (r *Result) Write(dir string) error {
	sum, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(dir, SummaryFile), append(sum, '\n')); err != nil {
		return err
	}
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	head := []string{"replay", "job", "cpus", "run_s", "limit_min", "log_submit_s", "slurm_id", "submit_s", "start_s", "end_s",
		"submit_at_s", "start_at_s", "end_at_s", "submit_cycle", "start_cycle", "run_cycles", "wait_cycles"}
	for _, p := range Predictors {
		head = append(head, p+"_start_cycle", p+"_error_cycles")
	}
	_ = w.Write(head)
	for k, obs := range r.Replays {
		cyc := OnCycles(obs)
		for i, j := range r.Jobs {
			o, c := obs[i], cyc[i]
			row := []string{strconv.Itoa(k + 1), strconv.Itoa(j.ID), strconv.Itoa(j.CPUs), num(j.Run), strconv.Itoa(j.Limit), num(j.Submit),
				strconv.Itoa(o.SlurmID), i64(o.Submit), i64(o.Start), i64(o.End),
				ms(o.SubmitAt), ms(o.StartAt), ms(o.EndAt), i64(c.Submit), i64(c.Start), i64(c.Run), i64(c.Start - c.Submit)}
			for p := range Predictors {
				s := r.Predictions[k][p][i].Start
				row = append(row, i64(s), i64(s-c.Start))
			}
			_ = w.Write(row)
		}
	}
	w.Flush()
	if err := atomicfile.Write(filepath.Join(dir, JobsFile), b.Bytes()); err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(dir, ConfFile), []byte(r.Config.scheduler().Text))
}

// Table prints the agreements, one row per predictor and Slurm's own
// spread.
func (r *Result) Table(out io.Writer) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "predictor\tjobs\tmedian |err| s\tp90 |err| s\tMAE s\tMAE ÷ mean wait\tτ-b\tpairs\t")
	for _, n := range r.Agreement {
		a := n.Agreement
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%.1f\t%.2f\t%.3f\t%.3f\t%d\t\n", n.Predictor, a.Jobs, a.MedianAbs, a.P90Abs, a.MAE, a.MAEOverWait, a.TauB, a.Pairs)
	}
	_ = tw.Flush()
	v := r.Verdict
	fmt.Fprintf(out, "mean wait %.1f s; offered load %.2f; slurm within 2× spread: %v; below half of fifo's: %v; τ-b ≥ 0.9: %v\n",
		r.Agreement[0].Agreement.MeanWait, r.Load, v.WithinTwiceSpread, v.BelowHalfFifo, v.TauAtLeast09)
}

func num(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }
func i64(x int64) string   { return strconv.FormatInt(x, 10) }
func ms(x float64) string  { return strconv.FormatFloat(x, 'f', 3, 64) }
