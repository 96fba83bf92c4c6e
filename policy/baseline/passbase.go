package baseline

// passBase is what a queue kept between passes (Waiting, Keyed) notes of
// its last pass, so that the next pass may build on it: backfill only from
// the requests filed since, where nothing else has changed behind the same
// blocked head (docs/traces.md, "Work per job"; AdmitEASYWaiting states
// the rule).
type passBase struct {
	// filed and left count the requests filed and dropped.
	filed, left uint64
	// As of the end of the last pass: the Core's changes, filed and left,
	// and its blocked head (-1: none; -2: no pass to build on).
	passChanges, passFiled, passLeft uint64
	passHead                         int
	// unfounded: a grant of this pass freed GPUs reserved for it, so the
	// pass ends with more GPUs free than its backfill counted, and a
	// request it passed over for want of them may start now.
	unfounded bool
}

// builds reports whether a pass whose blocked head is head may build on
// the last one: the same head, and no change to the Core since but the
// requests filed (no lease started, ended or was noticed, nothing left).
func (p *passBase) builds(k *Core, head int) bool {
	return p.passHead == head && k.changes-p.passChanges == p.filed-p.passFiled && p.left == p.passLeft
}

// endPass notes the state a pass left with blocked head head; a pass
// with an unfounded grant is no base.
func (p *passBase) endPass(k *Core, head int) {
	p.passChanges, p.passFiled, p.passLeft, p.passHead = k.changes, p.filed, p.left, head
	if p.unfounded {
		p.passHead, p.unfounded = -2, false
	}
}

// forget makes the next pass build on nothing.
func (p *passBase) forget() { p.passHead, p.unfounded = -2, false }
