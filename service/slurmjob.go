package service

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"

	"github.com/bursar-hpc/bursar/policy"
)

// Slurm job ids in the journal (issue 23 §6). The enforcer of
// `bursar serve --slurm-enforce` binds each lease to the first Slurm job
// it sees on the lease's token; the binding is a journaled operation,
// "slurm-job" (the campaign, the broker's lease id, the job id, and like
// every record the wall-clock time), so that it survives a restart with
// the rest of the state and the journal names, next to the lease's grant
// and release, the Slurm job that ran on it: what `sacct` or jobcomp say
// about that job id can be laid against the lease. A lease is bound once:
// a second job on the same token is refused (BindSlurmJob says which job
// holds it), which is what lets the enforcer cancel it (one token, one
// job). The campaign's journal shows it as a record of its own:
//
//	{"t": T, "event": "slurm-job", "lease": L, "campaign": "C", "job": "J"}

// opSlurmJob is the journal operation; its lease field is the broker's
// lease id and job the Slurm job id.
const opSlurmJob = "slurm-job"

// slurmJobRE matches a Slurm job id: a number, or an array task's
// number_index.
var slurmJobRE = regexp.MustCompile(`^[0-9]{1,12}(_[0-9]{1,9})?$`)

// errSlurmJobBound: the lease is bound to another job already.
var errSlurmJobBound = errors.New("the lease is bound to another Slurm job")

func (c *core) applySlurmJob(cid policy.CampaignID, cs *campState, o *op) (result, bool, error) {
	if !slurmJobRE.MatchString(o.Job) {
		return result{}, false, fmt.Errorf("%w: slurm-job: bad job id %q", errReplay, o.Job)
	}
	if cs.localID(o.Lease) == 0 {
		return result{}, false, fmt.Errorf("%w: slurm-job: campaign %s filed no request %d", errReplay, cs.name, o.Lease)
	}
	if cs.slurmJobs == nil {
		cs.slurmJobs = map[int]string{}
	}
	switch first, ok := cs.slurmJobs[o.Lease]; {
	case ok && first == o.Job:
		return result{}, false, nil
	case ok:
		return result{}, false, errSlurmJobBound
	}
	cs.slurmJobs[o.Lease] = o.Job
	ev := policy.Event{T: c.b.Now(), Lease: o.Lease, Campaign: cs.name, CampaignID: cid}
	c.journal.pushJob(ev, o.Job, c.wall)
	cs.journal.pushJob(ev, o.Job, c.wall)
	return result{}, true, nil
}

// appendSlurmJobRecord writes a slurm-job record in the layout of the
// broker's records (policy.Event.AppendJSON). Campaign names and job ids
// are plain ASCII (their patterns), which Go's quoting writes as JSON does.
func appendSlurmJobRecord(dst []byte, ev policy.Event, job string) []byte {
	dst = append(dst, "{\"t\": "...)
	dst = strconv.AppendInt(dst, int64(ev.T), 10)
	dst = append(dst, ", \"event\": \"slurm-job\", \"lease\": "...)
	dst = strconv.AppendInt(dst, int64(ev.Lease), 10)
	dst = append(dst, ", \"campaign\": "...)
	dst = strconv.AppendQuote(dst, ev.Campaign)
	dst = append(dst, ", \"job\": "...)
	dst = strconv.AppendQuote(dst, job)
	return append(dst, '}')
}

// BindSlurmJob binds the campaign's lease (its own id, as in the token) to
// Slurm job job, journaled, unless it is bound already. It answers the job
// the lease is bound to: job itself, or the one bound before, which tells
// the caller that job is a second job on the token. A lease the campaign
// never held (an unknown campaign, a bad id) is an error.
func (s *Service) BindSlurmJob(ctx context.Context, campaign string, lease int, job string) (bound string, err error) {
	err = s.withState(ctx, func(t *txn) error {
		id, cs, err := t.campaign(campaign)
		if err != nil {
			return err
		}
		g := cs.globalID(lease)
		if g == 0 {
			return fmt.Errorf("campaign %s has no lease %d", campaign, lease)
		}
		_, err = t.apply(&op{Op: opSlurmJob, C: int(id), Lease: g, Job: job})
		switch {
		case errors.Is(err, errSlurmJobBound):
			bound = cs.slurmJobs[g]
			return nil
		case err != nil:
			return err
		}
		bound = job
		return nil
	})
	return bound, err
}
