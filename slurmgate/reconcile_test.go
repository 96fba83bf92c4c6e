package slurmgate

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReconcileByHand: four finished jobs as jobcomp/filetxt writes them
// (times in the controller's local zone): one on its lease, one without a
// lease, one that ended 3 s after its lease (1800000000 is
// 2027-01-15T08:00:00Z), one on 4 CPUs with a 2-GPU lease; and one job in
// an ungated partition and one cancelled before it started, not checked.
func TestReconcileByHand(t *testing.T) {
	text := `JobId=1 UserId=root(0) GroupId=root(0) Name=a b JobState=COMPLETED Partition=gpu TimeLimit=1 StartTime=2027-01-15T07:59:00 EndTime=2027-01-15T08:00:00 NodeList=vm NodeCnt=1 ProcCnt=2 WorkDir=/tmp Tres=cpu=2 Account=sci QOS= WcKey=bursar:7:sci:2:1800000000 Cluster=unknown ExitCode=0:0
JobId=2 UserId=root(0) GroupId=root(0) Name=x JobState=COMPLETED Partition=gpu TimeLimit=1 StartTime=2027-01-15T07:59:00 EndTime=2027-01-15T08:00:00 NodeList=vm NodeCnt=1 ProcCnt=1 WorkDir=/tmp Tres=cpu=1 Account= QOS= WcKey= Cluster=unknown ExitCode=0:0
JobId=3 UserId=root(0) GroupId=root(0) Name=x JobState=CANCELLED Partition=gpu TimeLimit=1 StartTime=2027-01-15T07:59:00 EndTime=2027-01-15T08:00:03 NodeList=vm NodeCnt=1 ProcCnt=2 WorkDir=/tmp Tres=cpu=2 Account=sci QOS= WcKey=bursar:8:sci:2:1800000000 Cluster=unknown ExitCode=0:0
JobId=4 UserId=root(0) GroupId=root(0) Name=x JobState=COMPLETED Partition=gpu TimeLimit=1 StartTime=2027-01-15T07:59:00 EndTime=2027-01-15T07:59:30 NodeList=vm NodeCnt=1 ProcCnt=4 WorkDir=/tmp Tres=cpu=4 Account=sci QOS= WcKey=bursar:9:sci:2:1800000000 Cluster=unknown ExitCode=0:0
JobId=6 UserId=root(0) GroupId=root(0) Name=x JobState=CANCELLED Partition=gpu TimeLimit=1 StartTime=Unknown EndTime=2027-01-15T08:00:00 NodeList=(null) NodeCnt=0 ProcCnt=0 WorkDir=/tmp Tres= Account= QOS= WcKey= Cluster=unknown ExitCode=0:0
JobId=5 UserId=root(0) GroupId=root(0) Name=x JobState=COMPLETED Partition=debug TimeLimit=1 StartTime=2027-01-15T07:59:00 EndTime=2027-01-15T08:00:00 NodeList=vm NodeCnt=1 ProcCnt=1 WorkDir=/tmp Tres=cpu=1 Account= QOS= WcKey= Cluster=unknown ExitCode=0:0
`
	jobs, err := ReadJobcomp(strings.NewReader(text), "jobcomp.txt", time.UTC)
	require.NoError(t, err)
	require.Len(t, jobs, 6)
	assert.Equal(t, "bursar:7:sci:2:1800000000", jobs[0].WCKey)
	assert.Equal(t, int64(1800000000), jobs[0].End.Unix())
	found := Reconcile(jobs, map[string]bool{"debug": true}, time.Unix(1800000100, 0), time.Second, nil)
	var got []string
	for _, f := range found {
		got = append(got, f.Job.ID+" "+f.Kind)
	}
	assert.Equal(t, []string{"2 no lease", "3 past its lease", "4 larger than its lease"}, got)
	assert.Contains(t, found[1].Note, "3s later")

	// With the journal's bindings: lease 7 of sci is job 1's, lease 8 is
	// bound to job 30, so job 3 is a second job on it; lease 9 is not
	// bound (a job the enforcer never saw), which is no finding.
	found = Reconcile(jobs, map[string]bool{"debug": true}, time.Unix(1800000100, 0), time.Second,
		Bindings{"sci:7": "1", "sci:8": "30"})
	got = nil
	for _, f := range found {
		got = append(got, f.Job.ID+" "+f.Kind)
	}
	assert.Equal(t, []string{"2 no lease", "3 past its lease", "3 a second job on its lease", "4 larger than its lease"}, got)
	assert.Equal(t, "the journal binds lease 8 of sci to job 30", found[2].Note)

	_, err = ReadJobcomp(strings.NewReader("JobId=1 Name=x\n"), "jobcomp.txt", time.UTC)
	assert.ErrorContains(t, err, "jobcomp.txt:1: not a jobcomp/filetxt record")
	_, err = ReadJobcomp(strings.NewReader("JobId=1 ProcCnt=1 StartTime=never EndTime=x\n"), "jobcomp.txt", time.UTC)
	assert.ErrorContains(t, err, "jobcomp.txt:1: StartTime")
}
