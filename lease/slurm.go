//go:build unix

package lease

import (
	"strings"
	"sync"

	"github.com/bursar-hpc/bursar/slurmgate"
)

// slurmHand makes the wrapper's Slurm calls off the wrapper's loop, each
// as soon as it is asked for: on a loaded slurmctld a scancel can take
// seconds, and neither the loop nor the end of the lease waits for the
// notice's call to come back (a SIGKILL that overtakes the SIGTERM ends
// the job all the same).
type slurmHand struct {
	cluster slurmgate.Cluster
	token   string
	say     func(format string, args ...any)
	wg      sync.WaitGroup
}

// slurmAct is one call: the notice (term) or the end, why, and what to do
// once it is made.
type slurmAct struct {
	term  bool
	why   string
	after func()
	// cancel, when set, are jobs to cancel outright (their steps were
	// killed already).
	cancel []string
}

func newSlurmHand(c slurmgate.Cluster, token string, say func(string, ...any)) *slurmHand {
	return &slurmHand{cluster: c, token: token, say: say}
}

// send makes a call (the loop makes at most one notice and one end).
func (h *slurmHand) send(a slurmAct) {
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		if len(a.cancel) > 0 {
			err := slurmgate.Scancel(h.cluster, a.cancel...)
			h.say("%s: cancelled %s (%v)", a.why, strings.Join(a.cancel, ","), slurmgate.OKOr(err))
			return
		}
		what, err := slurmgate.EndLease(h.cluster, h.token, a.term)
		if a.term {
			h.say("%s: SIGTERM through Slurm to %s (%v)", a.why, what, slurmgate.OKOr(err))
		} else {
			h.say("%s: SIGKILL through Slurm to %s, cancelled (%v)", a.why, what, slurmgate.OKOr(err))
		}
		if a.after != nil {
			a.after()
		}
	}()
}

// close waits for the calls made.
func (h *slurmHand) close() { h.wg.Wait() }
