package slurmcheck

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// writeReplay lays out a replay's state folder: jobcomp.txt and
// slurmctld.log as Slurm 22.05 writes them (lines trimmed of the fields
// nobody reads).
func writeReplay(t *testing.T, jobcomp, ctld string) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "jobcomp.txt"), []byte(jobcomp), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "slurmctld.log"), []byte(ctld), 0o644))
	return dir
}

// The records of the log's jobs are found by name (v<ID>), whatever
// Slurm's ids and the order they ended in; times count from the whole
// second of the first submission, jobcomp's to the second and the log's
// to the millisecond; a job started by either scheduler is seen.
func TestReadReplay(t *testing.T) {
	dir := writeReplay(t,
		"JobId=8 UserId=root(0) GroupId=root(0) Name=v2 JobState=COMPLETED Partition=local TimeLimit=1 StartTime=2026-12-06T16:17:12 EndTime=2026-12-06T16:17:16 NodeList=b1 SubmitTime=2026-12-06T16:17:03 EligibleTime=2026-12-06T16:17:03\n"+
			"JobId=7 UserId=root(0) GroupId=root(0) Name=v1 JobState=COMPLETED Partition=local TimeLimit=1 StartTime=2026-12-06T16:17:03 EndTime=2026-12-06T16:17:12 NodeList=b1 SubmitTime=2026-12-06T16:17:03 EligibleTime=2026-12-06T16:17:03\n"+
			"JobId=3 UserId=root(0) GroupId=root(0) Name=other JobState=FAILED Partition=local\n",
		"[2026-12-06T16:17:00.743] error: Configured MailProg is invalid\n"+
			"[2026-12-06T16:17:03.472] _slurm_rpc_submit_batch_job: JobId=7 InitPrio=1 usec=593\n"+
			"[2026-12-06T16:17:03.487] _slurm_rpc_submit_batch_job: JobId=8 InitPrio=1 usec=340\n"+
			"[2026-12-06T16:17:03.768] sched/backfill: _start_job: Started JobId=7 in local on b1\n"+
			"[2026-12-06T16:17:12.812] _job_complete: JobId=7 WEXITSTATUS 0\n"+
			"[2026-12-06T16:17:12.813] _job_complete: JobId=7 done\n"+
			"[2026-12-06T16:17:12.816] sched: Allocate JobId=8 NodeList=b1 #CPUs=1 Partition=local\n"+
			"[2026-12-06T16:17:16.842] _job_complete: JobId=8 done\n")
	obs, err := ReadReplay(dir, []Job{{ID: 1}, {ID: 2}})
	require.NoError(t, err)
	require.Len(t, obs, 2)
	require.Equal(t, 7, obs[0].SlurmID)
	require.Equal(t, [3]int64{0, 0, 9}, [3]int64{obs[0].Submit, obs[0].Start, obs[0].End})
	require.Equal(t, [3]int64{0, 9, 13}, [3]int64{obs[1].Submit, obs[1].Start, obs[1].End})
	require.InDelta(t, 0.472, obs[0].SubmitAt, 1e-9)
	require.InDelta(t, 0.768, obs[0].StartAt, 1e-9)
	require.InDelta(t, 9.813, obs[0].EndAt, 1e-9)
	require.InDelta(t, 9.816, obs[1].StartAt, 1e-9)
	require.InDelta(t, 13.842, obs[1].EndAt, 1e-9)
}

// A job Slurm did not complete, or one the log never says started, is an
// error that names it.
func TestReadReplayRefusesIncompleteRecords(t *testing.T) {
	dir := writeReplay(t, "JobId=1 Name=v1 JobState=TIMEOUT SubmitTime=2026-12-06T16:17:03\n", "")
	_, err := ReadReplay(dir, []Job{{ID: 1}})
	require.ErrorContains(t, err, "job v1 ended TIMEOUT")
	dir = writeReplay(t,
		"JobId=1 Name=v1 JobState=COMPLETED StartTime=2026-12-06T16:17:03 EndTime=2026-12-06T16:17:04 SubmitTime=2026-12-06T16:17:03\n",
		"[2026-12-06T16:17:03.472] _slurm_rpc_submit_batch_job: JobId=1 InitPrio=1 usec=593\n")
	_, err = ReadReplay(dir, []Job{{ID: 1}})
	require.ErrorContains(t, err, "job 1 of the log started")
	_, err = ReadReplay(dir, []Job{{ID: 1}, {ID: 2}})
	require.ErrorContains(t, err, "no record of job v2")
}

// Whatever Slurm's files hold, reading them gives a replay or an error,
// never a panic.
func FuzzReadReplay(f *testing.F) {
	f.Add("JobId=7 Name=v1 JobState=COMPLETED StartTime=2026-12-06T16:17:03 EndTime=2026-12-06T16:17:12 SubmitTime=2026-12-06T16:17:03\n",
		"[2026-12-06T16:17:03.472] _slurm_rpc_submit_batch_job: JobId=7 InitPrio=1 usec=593\n"+
			"[2026-12-06T16:17:03.768] sched/backfill: _start_job: Started JobId=7 in local on b1\n"+
			"[2026-12-06T16:17:12.813] _job_complete: JobId=7 done\n")
	f.Add("JobId=x Name=v1\n", "[bad] line\n")
	f.Fuzz(func(t *testing.T, jobcomp, ctld string) {
		dir := writeReplay(t, jobcomp, ctld)
		obs, err := ReadReplay(dir, []Job{{ID: 1}})
		if err == nil && len(obs) != 1 {
			t.Fatalf("no error and %d records for one job", len(obs))
		}
	})
}
