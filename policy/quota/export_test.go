package quota

import "github.com/bursar-hpc/bursar/policy/baseline"

// OnDecision tells f of every victim a's fair-sharing preemption chooses.
func OnDecision(a *baseline.Core, f func(Decision)) { a.Rule().(*Rule).decide = f }

// Plain makes a's admission walk every queue from its start, without the
// skips that only save time.
func Plain(a *baseline.Core) { a.Rule().(*Rule).plain = true }
