//go:build unix

package main

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bursar-hpc/bursar/client"
	"github.com/bursar-hpc/bursar/internal/slurmtoken"
	"github.com/bursar-hpc/bursar/service"
)

// TestSlurmGateTokenBound (issue 35 item 3): a token names the Unix user
// and the Slurm account it was issued for, and the gate admits no other
// user's job and no other account on it, before the token is spent. At
// the parent a token worked for any user (alice ran on bob's lease). A
// token spent on a submission slurmctld refuses after the gate is
// unspent a few seconds later (at the parent the lease was lost).
func TestSlurmGateTokenBound(t *testing.T) {
	g := startSlurmGate(t)
	ctx := context.Background()
	as := "runuser -u nobody -- "

	t.Run("another user's token is refused", func(t *testing.T) {
		// The test runs as root: g.token's token names root.
		id, tok := g.token(t, 1, 120)
		g.refused(t, as+"sbatch -n 1 -o /dev/null --comment="+tok+" --wrap true", "was issued to user root: user nobody's job cannot run on it")
		g.refused(t, as+"srun -n 1 --comment="+tok+" true", "was issued to user root: user nobody's job cannot run on it")
		// Refused before it was spent: root's own job runs on it.
		out, code := g.sh(t, "srun -n 1 --comment="+tok+" true")
		assert.Equal(t, 0, code, out)
		_, err := g.admin.ReleaseLease(ctx, "sci", id)
		require.NoError(t, err)

		// A token for nobody: root's job is refused, nobody's admitted.
		acc, err := g.admin.Request(ctx, "sci", client.LeaseRequest{GPUs: 1, Duration: 120})
		require.NoError(t, err)
		w, err := g.admin.AwaitGrant(ctx, "sci", acc.RequestID)
		require.NoError(t, err)
		st, err := g.admin.SlurmTokenFor(ctx, "sci", w.Lease.ID, "nobody")
		require.NoError(t, err)
		assert.Equal(t, "nobody", st.User)
		g.refused(t, "sbatch -n 1 -o /dev/null --comment="+st.Token+" --wrap true", "was issued to user nobody: user root's job cannot run on it")
		out, code = g.sh(t, as+"sbatch --parsable -n 1 -o /dev/null --comment="+st.Token+" --wrap true")
		require.Equal(t, 0, code, out)
		job := strings.TrimSpace(out)
		out, _ = g.sh(t, "squeue -h -t all -j "+job+" -o '%u|%a'")
		assert.Equal(t, "nobody|sci", strings.TrimSpace(out))
		g.waitQueueEmpty(t, 30*time.Second)
		_, err = g.admin.ReleaseLease(ctx, "sci", w.Lease.ID)
		require.NoError(t, err)
	})

	t.Run("another account's token is refused", func(t *testing.T) {
		_, err := g.admin.Register(ctx, client.CampaignSpec{Name: "Physics", Budget: 1e9, Guaranteed: 0, Sustained: 4,
			BurstCeiling: 4, Bucket: 1e6, Class: client.ClassDeadline})
		require.NoError(t, err)
		acc, err := g.admin.Request(ctx, "Physics", client.LeaseRequest{GPUs: 1, Duration: 120})
		require.NoError(t, err)
		w, err := g.admin.AwaitGrant(ctx, "Physics", acc.RequestID)
		require.NoError(t, err)
		st, err := g.admin.SlurmToken(ctx, "Physics", w.Lease.ID)
		require.NoError(t, err)
		assert.Equal(t, "physics", st.Account)
		l, err := service.ParseSlurmToken(st.Token)
		require.NoError(t, err)
		assert.Equal(t, "physics", l.Account, "the token names its account")
		g.refused(t, "srun -n 1 --account=sci --comment="+st.Token+" true",
			"lease "+strconv.Itoa(w.Lease.ID)+" is campaign Physics's: the job must run under account physics, not sci")
		out, code := g.sh(t, "sbatch --parsable -n 1 -o /dev/null --comment="+st.Token+" --wrap true")
		require.Equal(t, 0, code, out)
		out, _ = g.sh(t, "squeue -h -t all -j "+strings.TrimSpace(out)+" -o %a")
		assert.Equal(t, "physics", strings.TrimSpace(out), "the gate sets the token's account")
		g.waitQueueEmpty(t, 30*time.Second)
		_, err = g.admin.ReleaseLease(ctx, "Physics", w.Lease.ID)
		require.NoError(t, err)
	})

	t.Run("a submission slurmctld refuses after the gate does not lose its lease", func(t *testing.T) {
		// slurmctld checks --test-only, a reservation, a node list (and at
		// a site an association) after the plugin's check has spent the
		// token: at the parent the lease could then admit no job at all.
		for _, refusedLater := range []string{
			"sbatch --test-only -n 1 -o /dev/null --comment=%s --wrap true",
			"srun --reservation=nosuch -n 1 --comment=%s true",
			"srun -w nosuchnode -n 1 --comment=%s true",
		} {
			id, tok := g.token(t, 1, 120)
			line := strings.ReplaceAll(refusedLater, "%s", tok)
			out, _ := g.sh(t, line)
			assert.NotContains(t, out, "bursar:", "the gate admitted it: %s", line)
			assert.Empty(t, g.jobs(t), "no job queued by %s", line)
			// The check's verifier finds no job on the token within a few
			// seconds and unspends it.
			var ran bool
			for end := time.Now().Add(15 * time.Second); time.Now().Before(end); time.Sleep(500 * time.Millisecond) {
				if out, code := g.sh(t, "srun -n 1 --comment="+tok+" true"); code == 0 {
					ran = true
					break
				} else {
					require.Contains(t, out, "admitted a job already", line)
				}
			}
			assert.True(t, ran, "after %q the lease's token admitted no job within 15 s", line)
			// The job that ran keeps the token spent, past the verifier's
			// looks (a finished job is still listed for MinJobAge).
			time.Sleep(slurmtoken.VerifyAfter + slurmtoken.VerifyAgain + time.Second)
			g.refused(t, "srun -n 1 --comment="+tok+" true", "admitted a job already")
			_, err := g.admin.ReleaseLease(ctx, "sci", id)
			require.NoError(t, err)
		}
	})

	t.Run("a token of the older kind, naming no user, is refused", func(t *testing.T) {
		old := "bursar1:1:sci:16:" + strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10) + ":" + strings.Repeat("0", 64)
		g.refused(t, "srun -n 1 --comment="+old+" true", "a Bursar token of an older kind, which names no user")
	})
}
