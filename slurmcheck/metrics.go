package slurmcheck

import (
	"encoding/json"
	"math"

	"github.com/bursar-hpc/bursar/internal/stats"
)

// Times is one job in one replay: its submit and start, in seconds from
// the replay's epoch.
type Times struct{ Submit, Start int64 }

// Agreement is how close a predictor's start times come to a reference
// replay's (docs/validate-slurm.md): the per-job start-time error
// |predicted − reference| and Kendall's τ-b over the pairs of jobs that
// waited together in the reference. Sums are kept so that replays pool
// (Add).
type Agreement struct {
	Jobs int
	// MedianAbs and P90Abs are percentiles of |error| in seconds, by the
	// model's rule (internal/stats.Percentile: the element at
	// ⌊p/100·n⌋ of the sorted values, no interpolation).
	MedianAbs float64
	P90Abs    float64
	// MAE is the mean |error|; MeanWait the reference's mean wait
	// (start − submit); MAEOverWait their ratio (NaN with no wait).
	MAE         float64
	MeanWait    float64
	MAEOverWait float64
	// TauB is Kendall's τ-b of the start times over Pairs, the pairs
	// queued together (TauCounts); NaN when no pair is ordered on both
	// sides.
	TauB  float64
	Pairs int

	abs        []float64
	sumAbs     float64
	sumWait    float64
	concordant int
	discordant int
	tiedRef    int // tied in the reference only
	tiedPred   int // tied in the prediction only
}

// Compare measures pred against ref, job by job (the same index is the
// same job). Both must have the same length.
func Compare(ref, pred []Times) Agreement {
	var a Agreement
	a.Add(ref, pred)
	return a
}

// Add pools one more replay into a and recomputes its figures.
func (a *Agreement) Add(ref, pred []Times) {
	if len(ref) != len(pred) {
		panic("slurmcheck: Compare needs one prediction per job")
	}
	for i := range ref {
		e := math.Abs(float64(pred[i].Start - ref[i].Start))
		a.abs = append(a.abs, e)
		a.sumAbs += e
		a.sumWait += float64(ref[i].Start - ref[i].Submit)
	}
	c := TauCounts(ref, pred)
	a.concordant += c.Concordant
	a.discordant += c.Discordant
	a.tiedRef += c.TiedRef
	a.tiedPred += c.TiedPred
	a.Pairs += c.Pairs
	a.Jobs += len(ref)
	a.finish()
}

func (a *Agreement) finish() {
	nan := math.NaN()
	a.MedianAbs, a.P90Abs, a.MAE, a.MeanWait, a.MAEOverWait = nan, nan, nan, nan, nan
	if a.Jobs > 0 {
		sorted := append([]float64(nil), a.abs...)
		a.MedianAbs = stats.Percentile(sorted, 50)
		a.P90Abs = stats.Percentile(sorted, 90)
		a.MAE = a.sumAbs / float64(a.Jobs)
		a.MeanWait = a.sumWait / float64(a.Jobs)
		if a.sumWait > 0 {
			a.MAEOverWait = a.sumAbs / a.sumWait
		}
	}
	a.TauB = TauB(a.concordant, a.discordant, a.tiedRef, a.tiedPred)
}

// Counts are the pairs TauCounts sorted: concordant (ordered the same
// way by both), discordant, tied in the reference only, tied in the
// prediction only, and Pairs, every pair counted (those tied on both
// sides too).
type Counts struct {
	Concordant, Discordant, TiedRef, TiedPred, Pairs int
}

// QueuedTogether reports whether jobs i and j of a replay waited at a
// common instant: both submitted before either started. A job that
// started the second it came waited with no one.
func QueuedTogether(x, y Times) bool {
	return max(x.Submit, y.Submit) < min(x.Start, y.Start)
}

// TauCounts sorts the pairs of jobs queued together in ref by how ref's
// and pred's start times order them.
func TauCounts(ref, pred []Times) Counts {
	var c Counts
	for i := range ref {
		for j := i + 1; j < len(ref); j++ {
			if !QueuedTogether(ref[i], ref[j]) {
				continue
			}
			c.Pairs++
			r := sign(ref[i].Start - ref[j].Start)
			p := sign(pred[i].Start - pred[j].Start)
			switch {
			case r == 0 && p == 0:
			case r == 0:
				c.TiedRef++
			case p == 0:
				c.TiedPred++
			case r == p:
				c.Concordant++
			default:
				c.Discordant++
			}
		}
	}
	return c
}

// TauB is Kendall's τ-b from pair counts:
//
//	τ-b = (C − D) / √((C + D + T_ref)(C + D + T_pred))
//
// where T_ref counts pairs tied in the reference only and T_pred those
// tied in the prediction only (pairs tied in both count in neither
// factor: Kendall 1945, the n0 − n1 and n0 − n2 of the usual form). NaN
// when either factor is 0.
func TauB(concordant, discordant, tiedRef, tiedPred int) float64 {
	c, d := float64(concordant), float64(discordant)
	den := math.Sqrt((c + d + float64(tiedRef)) * (c + d + float64(tiedPred)))
	if den == 0 {
		return math.NaN()
	}
	return (c - d) / den
}

func sign(x int64) int {
	switch {
	case x > 0:
		return 1
	case x < 0:
		return -1
	}
	return 0
}

// MarshalJSON writes the figures, a NaN (nothing to measure) as null.
func (a Agreement) MarshalJSON() ([]byte, error) {
	f := func(x float64) *float64 {
		if math.IsNaN(x) {
			return nil
		}
		return &x
	}
	return json.Marshal(struct {
		Jobs        int      `json:"jobs"`
		MedianAbs   *float64 `json:"median_abs_error_s"`
		P90Abs      *float64 `json:"p90_abs_error_s"`
		MAE         *float64 `json:"mean_abs_error_s"`
		MeanWait    *float64 `json:"mean_wait_s"`
		MAEOverWait *float64 `json:"mae_over_mean_wait"`
		TauB        *float64 `json:"tau_b"`
		Pairs       int      `json:"pairs_queued_together"`
		Concordant  int      `json:"concordant"`
		Discordant  int      `json:"discordant"`
	}{a.Jobs, f(a.MedianAbs), f(a.P90Abs), f(a.MAE), f(a.MeanWait), f(a.MAEOverWait), f(a.TauB), a.Pairs, a.concordant, a.discordant})
}
