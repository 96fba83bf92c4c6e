package tracestudy

import (
	"io"

	"github.com/bursar-hpc/bursar/policy/baseline"
	"github.com/bursar-hpc/bursar/policy/policies"
	"github.com/bursar-hpc/bursar/swf"
	"github.com/bursar-hpc/bursar/trace"
)

// The log's own record before a window (docs/studies.md §6.16): a policy
// with a usage memory (fairshare's decayed usage, budget's sliding window)
// starts a window with the usage the log records for the W (budget) or
// five half-lives (fairshare) before it, from each job's recorded start
// (submit + SWF field 3, the wait) and run, instead of an empty memory.

// Recorded is one job of the log as the machine ran it: its owner, its
// width and its recorded run [Start, End) in seconds of the log.
type Recorded struct {
	User, Group int
	GPUs        int
	Start, End  int64
}

// ReadRecorded reads every replayable record of the log at path ("" the
// embedded excerpt, or a built-in name: Builtin) that has a recorded wait, on a pool of pool GPUs.
func ReadRecorded(path string, pool int) ([]Recorded, error) {
	r, c, err := open(path)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	var out []Recorded
	for {
		j, err := r.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if swf.Check(&j, pool) != swf.Keep || j.Wait < 0 {
			continue
		}
		s := j.Submit + j.Wait
		out = append(out, Recorded{User: j.User, Group: j.Group, GPUs: j.Procs(), Start: s, End: s + j.Run})
	}
}

// Lookback is how much of the log's record before a window the policy
// reads (its descriptor's Lookback: budget's window W, five of
// fairshare's half-lives, else none).
func Lookback(s Spec) int64 { return policies.Default.Lookback(s.Policy, s.Knobs) }

// History is the usage the log records in the lookback seconds before w's
// first submit, as the replay of w sees it: by campaign name (as w maps
// owners to campaigns), in the replay's ticks (tick t is second t + first
// submit − 1 of the log), every tick ≤ 0. Records of owners with no
// campaign in w, and usage after tick 0 (jobs submitted before the window
// and still running in it, which are not replayed), are left out.
func History(recs []Recorded, w *trace.Workload, opt trace.Options, lookback int64) []baseline.Usage {
	if lookback <= 0 || len(w.Jobs) == 0 {
		return nil
	}
	base := w.Jobs[0].Submit - 1
	from := base + 1 - lookback
	names := campaignNames(w, opt)
	var out []baseline.Usage
	for _, r := range recs {
		if r.End <= from || r.Start > base {
			continue
		}
		name, ok := names[ownerKey(r.User, r.Group, opt)]
		if !ok {
			continue
		}
		a, b := max(r.Start, from)-base, min(r.End, base+1)-base
		out = append(out, baseline.Usage{Campaign: name, Start: int(a), End: int(b), GPUs: r.GPUs})
	}
	return out
}

// owner identifies the campaign of a record under opt's mapping (as
// trace.Read does): a (user, group) pair, the user alone (revision 1's
// UserCampaigns), or the group alone (ByGroup); a record without a group
// stands in its user's own group.
type owner struct {
	user      int
	userGroup bool
	group     int
}

func ownerKey(user, group int, opt trace.Options) owner {
	o := owner{user: user, group: group}
	if group < 0 {
		o.userGroup, o.group = true, user
	}
	switch {
	case opt.ByGroup:
		o.user = -1
	case opt.UserCampaigns:
		o.userGroup, o.group = false, 0
	}
	return o
}

// campaignNames maps each owner key of w's campaigns to the campaign's
// name.
func campaignNames(w *trace.Workload, opt trace.Options) map[owner]string {
	m := make(map[owner]string, len(w.Campaigns))
	for _, cp := range w.Campaigns {
		g := w.Groups[cp.Group]
		o := owner{user: cp.ID, group: g.ID, userGroup: g.User}
		switch {
		case opt.ByGroup:
			o.user = -1
		case opt.UserCampaigns:
			o.userGroup, o.group = false, 0
		}
		m[o] = cp.Name
	}
	return m
}

// windowHistory is the history each spec of st reads in window k.
func (st *Study) windowHistory(s, k int) []baseline.Usage {
	if st.Recorded == nil {
		return nil
	}
	sp := st.Specs[s]
	return History(st.Recorded, st.Loads[k], st.Options, st.registry().Lookback(sp.Policy, sp.Knobs))
}
