package quota

import (
	"fmt"
	"slices"

	"github.com/bursar-hpc/bursar/policy/baseline"
)

// OnDecision tells f of every victim a's fair-sharing preemption chooses.
func OnDecision(a *baseline.Core, f func(Decision)) { a.Rule().(*Rule).decide = f }

// Plain makes a's admission walk every queue from its start and search
// at every preemption attempt, without the skips that only save time.
func Plain(a *baseline.Core) { a.Rule().(*Rule).plain = true }

// AuditVictims checks, at every preemption attempt of a's, the candidates
// the rule gathered from its victim lists against the gathering they
// replaced: every lease not under notice of the filler, and of each other
// queue that borrows, sorted afresh in victim order. f is told of each
// attempt and of what differed ("" if nothing).
func AuditVictims(a *baseline.Core, f func(diff string)) {
	r := a.Rule().(*Rule)
	r.audit = func(k *baseline.Core, p int) {
		leases := k.Leases()
		var filler []int
		cands := make([][]int, len(r.nominal))
		for j := range leases {
			l := &leases[j]
			if l.UnderNotice {
				continue
			}
			switch q := r.queueOf[l.Campaign]; {
			case q < 0:
				filler = append(filler, j)
			case q != p && r.kept[q] > r.nominal[q]:
				cands[q] = append(cands[q], j)
			}
		}
		order := func(a, b int) int { return baseline.VictimOrder(&leases[a], &leases[b]) }
		slices.SortFunc(filler, order)
		var withC []int
		for q := range cands {
			if len(cands[q]) > 0 {
				withC = append(withC, q)
				slices.SortFunc(cands[q], order)
			}
		}
		diff := ""
		for x := 1; x < len(r.holding); x++ {
			if r.holding[x-1] >= r.holding[x] {
				diff += fmt.Sprintf("holding %v not strictly ascending; ", r.holding)
				break
			}
		}
		if !slices.Equal(filler, r.fillerCands) {
			diff += fmt.Sprintf("filler %v, want %v; ", r.fillerCands, filler)
		}
		if !slices.Equal(withC, r.withC) {
			diff += fmt.Sprintf("queues %v, want %v; ", r.withC, withC)
		}
		for _, q := range withC {
			if !slices.Equal(cands[q], r.cands[q]) {
				diff += fmt.Sprintf("queue %d: %v, want %v; ", q, r.cands[q], cands[q])
			}
		}
		f(diff)
	}
}

// AuditBound makes every preemption attempt of a's search even where its
// bound (takable) turns it away, and tells f whether it did (beyond) and
// whether the search succeeded.
func AuditBound(a *baseline.Core, f func(beyond, succeeded bool)) { a.Rule().(*Rule).bound = f }

// AuditTakable checks every bound a's takable works out against the
// walk of every holding queue (the walk it skips when no queue kept
// more than maxExcess above its quota); f is told of each and of what
// differed ("" if nothing).
func AuditTakable(a *baseline.Core, f func(diff string)) {
	r := a.Rule().(*Rule)
	r.takableAudit = func(p, over, n int) {
		want := r.fillerKept
		for _, q := range r.holding {
			if ex := r.kept[q] - r.nominal[q]; q != p && ex > over {
				want += min(r.kept[q], ex-over-1+r.widest[q])
			}
		}
		diff := ""
		if n != want {
			diff = fmt.Sprintf("queue %d, %d over its quota: takable %d (most excess %d), the walk %d (holding %v, kept %v, nominal %v)",
				p, over, n, r.maxExcess, want, r.holding, r.kept, r.nominal)
		}
		f(diff)
	}
}

// Unsettled makes a's rounds give every candidate its turn in order and
// ask every queue not done (no doomed candidates set aside unsorted).
func Unsettled(a *baseline.Core) { a.Rule().(*Rule).unsettled = true }

// Undeferred makes a's passes ask every queue at once (none put off as
// doomed).
func Undeferred(a *baseline.Core) { a.Rule().(*Rule).undeferred = true }

// LazyFrom makes a's rounds ask lazily (askBefore) from n queues on.
func LazyFrom(a *baseline.Core, n int) { a.Rule().(*Rule).lazyFrom = n }

// Lazied is how many of a's rounds asked lazily; AsOfAsks how many asks
// they put off at a grant and made up as of their start, and LateAsks
// how many they made just before a notice.
func Lazied(a *baseline.Core) int   { return a.Rule().(*Rule).lazied }
func AsOfAsks(a *baseline.Core) int { return a.Rule().(*Rule).asOfAsks }
func LateAsks(a *baseline.Core) int { return a.Rule().(*Rule).lateAsks }

// PutOff is how many asks a's passes put off, and CaughtUp how many of
// them they made up.
func PutOff(a *baseline.Core) int   { return a.Rule().(*Rule).putOff }
func CaughtUp(a *baseline.Core) int { return a.Rule().(*Rule).caughtUp }

// Deferred are the queues a's last pass left put off.
func Deferred(a *baseline.Core) []int { return slices.Clone(a.Rule().(*Rule).deferred) }

// Settled is how many candidates a's rounds set aside as doomed, and
// queues they found done unasked.
func Settled(a *baseline.Core) int { return a.Rule().(*Rule).settled }

// Revived is how many of a's candidates were doomed when their round's
// turns began and not at their own turn, after a change before it.
func Revived(a *baseline.Core) int { return a.Rule().(*Rule).revived }

// PassState is what a's last pass left of its queues: by queue the
// cursor, whether it is done and the narrowest failed preemption.
func PassState(a *baseline.Core) (cursor []int, done []bool, minFail []int) {
	r := a.Rule().(*Rule)
	return slices.Clone(r.cursor), slices.Clone(r.done), slices.Clone(r.minFail)
}

// Open are the queues a's last pass asked.
func Open(a *baseline.Core) []int { return slices.Clone(a.Rule().(*Rule).open) }

// Skipped is how many of a's passes were skipped as quiet.
func Skipped(a *baseline.Core) int { return a.Rule().(*Rule).skipped }

// OverBucket is the bucket of a queue's over (overBucket), and
// OverBuckets their number.
var OverBucket = overBucket

const OverBuckets = overBuckets
