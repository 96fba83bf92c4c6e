package baseline

import (
	"math"

	"github.com/bursar-hpc/bursar/policy"
)

// GrantsOnly stops keeping credits and the utilization sum from now on, in
// a copy of the Core that is read only for its grants and releases (the
// fair start times' forks, docs/studies.md §4.4), ticked or skipped and
// given rigid requests up to tick until at the latest, and never asked to
// Consume. Charging every held GPU every second is most of a long skip
// (debit is linear in the seconds skipped, to match Tick bit for bit),
// and a fork skips through the sampled job's whole wait.
//
// Credits decide a grant only where a campaign's are exhausted (a request
// is then denied, Core.file): GrantsOnly does nothing and reports false
// unless every campaign's credits stay positive to tick until even if it
// held the whole pool at the dearest class's price every second, so that
// no grant or denial can differ from the Core's with its books kept.
// Credits, Spent, Supply and Utilization of the copy are then stale.
func (k *Core) GrantsOnly(until int) bool {
	if k.grantsOnly {
		return true
	}
	price := 0.0
	for c := range policy.Class(4) {
		price = max(price, c.BasePrice())
	}
	// At most pool × price / 3600 a second, with a margin far above the
	// rounding of the charges' sums (one part in 10¹⁶ per subtraction).
	most := float64(max(until-k.now, 0)) * float64(k.cfg.Pool) * price / 3600 * (1 + 1e-6)
	for i := range k.camps {
		if c := k.camps[i].credits; !(c-most > 1e-6*math.Abs(c)) {
			return false
		}
	}
	k.grantsOnly = true
	return true
}
