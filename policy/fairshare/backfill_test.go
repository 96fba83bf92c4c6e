package fairshare_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/baseline"
	bt "github.com/bursar-hpc/bursar/policy/baseline/baselinetest"
	"github.com/bursar-hpc/bursar/policy/fairshare"
)

// A backfill pass whose free GPUs outlast the first few candidates that
// baseline.Keyed keeps in queue order, so that it must read the others
// again. Worked by hand on 16 GPUs: c0's 10-GPU job runs from second 1
// to 1001; c1's 14-GPU job heads the queue from second 3, reserved for
// second 1001 (6 GPUs free, 2 extra). Twelve one-GPU jobs (leases 3 to
// 14) are filed at second 3, round robin over c0, c1 and c2: c0's run
// 5000 s, the others' 50 s. c0 has used GPUs and c1 and c2 none, so c0's
// come last, and c1's and c2's go by submit time, then id: 4, 5, 7, 8,
// 10, 11, 13, 14. All end by the shadow time, so EASY starts the first
// six at second 3.
func TestKeptBackfillReadsPastItsFirstCandidates(t *testing.T) {
	a, err := baseline.New(bt.Config(16, 0), fairshare.NewRule(fairshare.DefaultKnobs()))
	if err != nil {
		t.Fatal(err)
	}
	var j bt.Journal
	a.SetRecorder(&j)
	for i := range 3 {
		if _, err := a.Register(bt.Env(fmt.Sprintf("c%d", i), float64(i+1), policy.AgentBurst)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.RequestRigid(0, 10, 1000, 1000, policy.AgentBurst, a.Now()+1); err != nil {
		t.Fatal(err)
	}
	bt.Ticks(a, 2)
	if _, err := a.RequestRigid(1, 14, 500, 500, policy.AgentBurst, a.Now()+1); err != nil {
		t.Fatal(err)
	}
	for i := range 12 {
		run := 50
		if i%3 == 0 {
			run = 5000
		}
		if _, err := a.RequestRigid(policy.CampaignID(i%3), 1, run, run, policy.AgentBurst, a.Now()+1); err != nil {
			t.Fatal(err)
		}
	}
	bt.Ticks(a, 2)
	grants := bytes.Count(j.Bytes, []byte(`{"t": 3, "event": "grant"`))
	for _, l := range []int{4, 5, 7, 8, 10, 11} {
		if !bytes.Contains(j.Bytes, fmt.Appendf(nil, `{"t": 3, "event": "grant", "lease": %d, `, l)) {
			t.Errorf("lease %d not granted at second 3", l)
		}
	}
	if grants != 6 {
		t.Errorf("%d grants at second 3, want 6", grants)
	}
	if t.Failed() {
		t.Logf("journal:\n%s", j.Bytes)
	}
}
