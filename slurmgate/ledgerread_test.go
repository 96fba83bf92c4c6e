package slurmgate

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEnforcerLedgerEvents: the ledger says when each job on a token was
// first seen running, when its lease was first seen released while it
// was listed, and the last read that listed it; read back, the job is
// found by its id and by Slurm's number (an array task's).
func TestEnforcerLedgerEvents(t *testing.T) {
	now := time.Now().Truncate(time.Millisecond)
	ledger := filepath.Join(t.TempDir(), "ledger")
	f := &fakeCluster{queue: []QueuedJob{
		{ID: "9_1", Number: "10", Comment: token(7, now.Add(time.Hour)), State: "RUNNING", CPUs: "1"},
	}}
	ls := leases(7)
	e := newEnforcer(t, f, ls, ledger, now)
	e.pass(context.Background(), now)
	ls.held = map[int]bool{}
	e.pass(context.Background(), now.Add(time.Second))
	e.pass(context.Background(), now.Add(2*time.Second))
	f.queue = nil
	e.pass(context.Background(), now.Add(3*time.Second))
	b, err := os.ReadFile(ledger)
	require.NoError(t, err)
	led, err := ReadLedger(bytes.NewReader(b), "ledger")
	require.NoError(t, err, "%s", b)
	j := led["10"]
	require.NotNil(t, j, "found by Slurm's number")
	assert.Same(t, j, led["9_1"])
	assert.Equal(t, 7, j.Lease)
	assert.Equal(t, now, j.Running)
	assert.Equal(t, now.Add(time.Second), j.Released)
	assert.Equal(t, now.Add(2*time.Second), j.LastSeen)
}

func TestReadLedgerErrors(t *testing.T) {
	_, err := ReadLedger(strings.NewReader(`{"job":"5","event":"running","t_unix_ms":1}`+"\n"), "L")
	assert.EqualError(t, err, `L:1: event "running" of job 5, which no line before binds to a lease`)
	_, err = ReadLedger(strings.NewReader("{\"job\":\"5\",\"lease\":1}\nnot json\n"), "L")
	assert.ErrorContains(t, err, "L:2: not a ledger line")
	_, err = ReadLedger(strings.NewReader(`{"job":"5","lease":1}`+"\n"+`{"job":"5","event":"lost","t_unix_ms":1}`+"\n"), "L")
	assert.EqualError(t, err, `L:2: unknown ledger event "lost"`)
}

// TestReconcileLedger, worked by hand: lease 1 (2 CPUs) ends at t0+10.
// Job 11 was cancelled by its user at t0+8 (jobcomp's end) but the
// enforcer saw it until t0+36 (KillWait): past its lease by 26 s. Job 12
// carries a forged WcKey and no ledger line: no lease. Job 13 ran 5 s
// after its lease's release. Jobs 14 and 15, one lease's array tasks of 2
// CPUs each, ran at once on a 2-CPU lease. Job 16 kept to its lease.
func TestReconcileLedger(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	line := func(s string) string { return s + "\n" }
	at := func(d time.Duration) string { return itoa(t0.Add(d).UnixMilli()) }
	exp := itoa(t0.Add(10 * time.Second).Unix())
	ledger := line(`{"job":"11","lease":1,"campaign":"sci","gpus":2,"expires_unix":`+exp+`}`) +
		line(`{"job":"11","event":"last-seen","t_unix_ms":`+at(36*time.Second)+`}`) +
		line(`{"job":"13","lease":2,"campaign":"sci","gpus":2,"expires_unix":`+itoa(t0.Add(time.Hour).Unix())+`}`) +
		line(`{"job":"13","event":"released","t_unix_ms":`+at(2*time.Second)+`}`) +
		line(`{"job":"13","event":"last-seen","t_unix_ms":`+at(7*time.Second)+`}`) +
		line(`{"job":"9_0","job_id":"14","lease":3,"campaign":"sci","gpus":2,"expires_unix":`+itoa(t0.Add(time.Hour).Unix())+`}`) +
		line(`{"job":"9_1","job_id":"15","lease":3,"campaign":"sci","gpus":2,"expires_unix":`+itoa(t0.Add(time.Hour).Unix())+`}`) +
		line(`{"job":"16","lease":4,"campaign":"sci","gpus":2,"expires_unix":`+exp+`}`)
	led, err := ReadLedger(strings.NewReader(ledger), "ledger")
	require.NoError(t, err)
	job := func(id string, cpus int, start, end time.Duration) Job {
		return Job{ID: id, Partition: "local", State: "COMPLETED", WCKey: "bursar:1:sci:2:" + exp, CPUs: cpus, Start: t0.Add(start), End: t0.Add(end)}
	}
	jobs := []Job{job("11", 2, 0, 8*time.Second), job("12", 2, 0, 5*time.Second), job("13", 1, 0, 7*time.Second),
		job("14", 2, 0, 20*time.Second), job("15", 2, time.Second, 20*time.Second), job("16", 2, 0, 10*time.Second)}
	var b bytes.Buffer
	found := ReconcileLedger(jobs, led, nil, t0.Add(time.Hour), time.Second)
	Report(&b, jobs, found, nil)
	assert.Equal(t, "job 11 (local, COMPLETED, 2 CPUs): past its lease: lease 1 ended "+t0.Add(10*time.Second).Format(slurmTimeLayout)+
		", the job 26s later (Slurm records its end at "+t0.Add(8*time.Second).Format(slurmTimeLayout)+"; the enforcer saw it 28s after)\n"+
		"job 12 (local, COMPLETED, 2 CPUs): no lease: the enforcer's ledger binds it to no lease (WcKey \"bursar:1:sci:2:"+exp+"\" not trusted)\n"+
		"job 13 (local, COMPLETED, 1 CPUs): after its lease's release: lease 2 of sci released by "+t0.Add(2*time.Second).Format(slurmTimeLayout)+", the job ran 5s longer\n"+
		"job 15 (local, COMPLETED, 2 CPUs): larger than its lease: with the other jobs of lease sci:3, 4 CPUs at once on 2\n"+
		"6 jobs checked: 1 without a lease, 1 past their lease, 1 larger than their lease, 1 after their lease's release\n", b.String())
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
