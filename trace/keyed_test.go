package trace

import (
	"fmt"
	"testing"

	"github.com/bursar-hpc/bursar/policy/fairshare"
	"github.com/bursar-hpc/bursar/policy/policies"
	"pgregory.net/rapid"
)

// fairshare's queue kept between passes (baseline.Keyed, issue 32)
// decides as the queue sorted from the whole pending list at every pass:
// on random traces of up to a dozen campaigns, jobs of every class (its
// preemption of the opportunistic class, and the requeued jobs it
// preempts), knobs drawn across their ranges (ages capped within a
// period or never, weights from none to large, periods of one second to
// ten minutes), fair starts' forks, ticked or skipped: the same journal
// and the same run.
func TestKeyedQueueDecidesAsThePlainOne(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		w := classedTrace(t, 64, 60, 300, 600)
		ncamp := rapid.IntRange(1, 12).Draw(t, "campaigns")
		w.Campaigns = w.Campaigns[:0]
		for c := range ncamp {
			w.Campaigns = append(w.Campaigns, Campaign{ID: c, Name: fmt.Sprintf("user %d", c), Share: float64(c+1) / float64(ncamp*(ncamp+1)/2)})
		}
		for i := range w.Jobs {
			w.Jobs[i].Campaign = rapid.IntRange(0, ncamp-1).Draw(t, "campaign")
		}
		knobs := policies.TraceKnobs()
		k := fairshare.Slot.Edit(&knobs)
		k.HalfLife = rapid.SampledFrom([]float64{1, 60, 3600, 7 * 24 * 3600}).Draw(t, "half life")
		k.WFairshare = rapid.SampledFrom([]float64{0, 1, 10000, 1e9}).Draw(t, "w_fairshare")
		k.WAge = rapid.SampledFrom([]float64{0, 1, 1000, 1e9}).Draw(t, "w_age")
		k.MaxAge = rapid.SampledFrom([]float64{1, 300, 1800, 7 * 24 * 3600}).Draw(t, "max age")
		k.CalcPeriod = rapid.SampledFrom([]int{1, 7, 60, 300, 600}).Draw(t, "calc period")
		keptAndPlain(t, w, fairshare.Name, knobs)
	})
}
