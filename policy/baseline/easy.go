package baseline

// EASY is the scratch space of an EASY admission (studies.md §2.1 steps 3
// and 4): the pass itself is policy/easy's, this adapts the lease table and
// the pending list to it. The zero value is ready; a pass allocates
// nothing once the buffers have grown.
type EASY struct {
	pass    easyScheduler
	running []easyRunning
	jobs    []easyJob
	ids     []int
	wants   []int

	// The head and the rule's eligibility, behind one closure made once.
	head     *Request
	eligible func(head *Request, l *Lease) bool
	el       func(l *Lease) bool
}

// AdmitEASY admits the pending requests ids (not the filler's), in the
// queue order the rule chose (FCFS, or priority order):
//
//  1. While the head fits (whole, or by the broker's partial-grant rule,
//     studies.md §6.1, with its reservation), start it.
//  2. A head that does not fit may preempt: the filler's leases always
//     (§6.2), others where eligible accepts them for that head (nil: none),
//     as Core.Preempt does (§6.6).
//  3. One EASY backfill pass over the rest of the queue from the head on:
//     the running leases' estimated ends are their ends (expiry, or the
//     preemption time under notice), and the GPUs the head already has
//     reserved count as ending now, so the head's shadow time is right;
//     backfilled jobs start whole in the GPUs nobody has reserved.
//
// A request whose campaign is at its limit (Want 0) cannot run and is left
// out of the pass.
func (k *Core) AdmitEASY(e *EASY, ids []int, eligible func(head *Request, l *Lease) bool) {
	h := 0
	for ; h < len(ids); h++ {
		i := k.Index(ids[h])
		if k.Want(i) == 0 {
			continue // a campaign at its limit does not hold the queue
		}
		room := k.rule.Room(k, k.pending[i].Campaign)
		if !k.TryStart(i, room) {
			var el func(l *Lease) bool
			if eligible != nil {
				if e.el == nil {
					e.el = func(l *Lease) bool { return e.eligible(e.head, l) }
				}
				e.head, e.eligible, el = &k.pending[i], eligible, e.el
			}
			k.Preempt(i, k.Missing(i, room), nil, el)
			e.head = nil
			break
		}
	}
	if h >= len(ids) {
		return
	}
	// The pass, over the queue from the blocked head on.
	head := &k.pending[k.Index(ids[h])]
	e.running = e.running[:0]
	for j := range k.leases {
		l := &k.leases[j]
		e.running = append(e.running, easyRunning{GPUs: l.GPUs, EstEnd: int64(l.Estimated())})
	}
	if head.Reserved > 0 {
		e.running = append(e.running, easyRunning{GPUs: head.Reserved, EstEnd: int64(k.now)})
	}
	e.jobs, e.ids, e.wants = e.jobs[:0], e.ids[:0], e.wants[:0]
	for _, id := range ids[h:] {
		i := k.Index(id)
		want := k.Want(i)
		if want == 0 {
			continue
		}
		e.jobs = append(e.jobs, easyJob{GPUs: want, Estimate: int64(k.pending[i].Duration)})
		e.ids = append(e.ids, id)
		e.wants = append(e.wants, want)
	}
	for _, j := range e.pass.Pass(int64(k.now), max(0, k.FreeGeneral()), e.running, e.jobs) {
		i := k.Index(e.ids[j])
		if want := e.wants[j]; want <= k.FreeGeneral() {
			k.Grant(i, want)
		}
	}
}

// IsFiller reports whether lease l is the filler's.
func (k *Core) IsFiller(l *Lease) bool { return k.camps[l.Campaign].Filler }
