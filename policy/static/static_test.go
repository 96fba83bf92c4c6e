package static_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/baseline"
	bt "github.com/bursar-hpc/bursar/policy/baseline/baselinetest"
	"github.com/bursar-hpc/bursar/policy/static"
)

// The worked examples follow docs/studies.md §2's `static` row and rules
// 1, 2, 6, 15 and 19, as docs/policies.md states them; the condo model is
// Slurm's: owner partitions over their own nodes and a scavenger partition
// of lower PriorityTier over all of them, whose jobs are preempted with
// GraceTime when an owner's job needs the nodes
// (https://slurm.schedmd.com/preempt.html, PreemptType=preempt/partition_prio).

func newStatic(t *testing.T, pool, grace int, knobs static.Knobs, rs ...float64) (*baseline.Core, *bt.Journal, []policy.CampaignID) {
	t.Helper()
	a, err := static.New(bt.Config(pool, grace), knobs)
	require.NoError(t, err)
	j := &bt.Journal{}
	a.SetRecorder(j)
	var ids []policy.CampaignID
	for i, r := range rs {
		id, err := a.Register(bt.Env(fmt.Sprintf("c%d", i), r, policy.AgentBurst))
		require.NoError(t, err)
		ids = append(ids, id)
	}
	return a, j, ids
}

func scavenger() static.Knobs {
	k := static.DefaultKnobs()
	k.Lend = static.LendScavenger
	return k
}

func rule(a *baseline.Core) *static.Rule { return a.Rule().(*static.Rule) }

// journaledTwins is two static Cores on one pool with knobs kn, each
// writing its own journal: a property test makes one of them the plain
// rule and compares the journals.
func journaledTwins(t require.TestingT, pool, grace int, kn static.Knobs) ([2]*baseline.Core, [2]*bt.Journal) {
	var twins [2]*baseline.Core
	var journals [2]*bt.Journal
	for x := range twins {
		a, err := static.New(bt.Config(pool, grace), kn)
		require.NoError(t, err)
		journals[x] = &bt.Journal{}
		a.SetRecorder(journals[x])
		twins[x] = a
	}
	return twins, journals
}

// Largest remainder (§6.15), owners 2 of five groups with R 3, 3, 2, 1, 1
// on 16 GPUs: the owners' exact parts are 16 × 3/10 = 4.8 each, the
// general partition's 16 × 4/10 = 6.4; floors 4 + 4 + 6 = 14, and the 2
// GPUs left go to the largest remainders, .8 and .8: 5, 5, 6, which cover
// the pool. Revision 1's floors per user left 2 GPUs to nobody.
func TestPartitionsByLargestRemainder(t *testing.T) {
	k := static.DefaultKnobs()
	k.Owners = 2
	a, _, ids := newStatic(t, 16, 60, k, 3, 3, 2, 1, 1)
	require.Equal(t, []int{5, 5, 6}, rule(a).Sizes())
	for c, want := range []int{0, 1, 2, 2, 2} {
		p, _ := rule(a).Partition(ids[c])
		require.Equal(t, want, p, "campaign %d", c)
	}
	// A tie of remainders goes to the larger share: R 1 and 3 on 2 GPUs are
	// exactly 0.5 and 1.5, floors 0 and 1, remainders .5 and .5; the
	// larger share (R 3) takes the last GPU: 2 and 0.
	a, _, _ = newStatic(t, 2, 60, static.DefaultKnobs(), 1, 3)
	require.Equal(t, []int{2, 0}, rule(a).Sizes())
}

// Under lend none a rigid job wider than its partition is denied at once
// (§6.1); under lend scavenger it is accepted, and runs only as a
// scavenger.
func TestWiderThanPartition(t *testing.T) {
	// R 3 and 7 on 100 GPUs: partitions 70 (c1) and 30 (c0).
	a, j, ids := newStatic(t, 100, 60, static.DefaultKnobs(), 3, 7)
	_, err := a.RequestRigid(ids[0], 31, 100, 100, policy.AgentBurst, 1)
	require.ErrorIs(t, err, policy.ErrExceedsLimit)
	require.Len(t, j.Of(policy.EventDeny), 1)
	_, err = a.RequestRigid(ids[0], 30, 100, 100, policy.AgentBurst, 1)
	require.NoError(t, err)

	a, j, ids = newStatic(t, 100, 60, scavenger(), 3, 7)
	id, err := a.RequestRigid(ids[0], 90, 100, 100, policy.AgentBurst, 1)
	require.NoError(t, err)
	a.Tick()
	// 90 GPUs: c1's 70 idle first (another owner's), then 20 of c0's own.
	require.Equal(t, 90, a.Held(ids[0], policy.AnyClass))
	owner, lent := rule(a).Books(a)
	require.Equal(t, []int{0, 0}, owner)
	require.Equal(t, []int{70, 20}, lent)
	_, ok := j.Grant(id)
	require.True(t, ok)
}

// An elastic request is cut to what its partition has free, by the
// broker's partial-grant rule (at least min(want, 16)), never denied for
// its width: partitions 30 and 70; c0 asks 90 and gets its 30, the
// other partition's 70 stay idle.
func TestElasticRequestIsCutToThePartition(t *testing.T) {
	a, j, ids := newStatic(t, 100, 60, static.DefaultKnobs(), 3, 7)
	_, err := a.Request(ids[0], 90, 5000, policy.AnyClass)
	require.NoError(t, err)
	a.Tick()
	require.Equal(t, 30, a.Held(ids[0], policy.AnyClass))
	require.Equal(t, 0, a.Supply(ids[0]).Free)
	require.Equal(t, 70, a.Supply(ids[1]).Free)
	// Another 10: nothing free in the partition, it waits until its TTL.
	_, _ = a.Request(ids[0], 10, 100, policy.AnyClass)
	bt.Ticks(a, policy.RequestTTL+1)
	require.Equal(t, 30, a.Held(ids[0], policy.AnyClass))
	require.Len(t, j.Of(policy.EventRequestExpired), 1)
	require.Empty(t, j.Of(policy.EventPreemptNotice))
	// c1 holds 60 of its 70 and asks 20: want = min(20, 70 − 60) = 10, and
	// 10 ≥ min(10, 16), so it gets the 10.
	_, _ = a.Request(ids[1], 60, 5000, policy.AnyClass)
	a.Tick()
	_, _ = a.Request(ids[1], 20, 5000, policy.AnyClass)
	a.Tick()
	require.Equal(t, 70, a.Held(ids[1], policy.AnyClass))
}

// Scavenger lend and reclaim (§6.19): partitions A 20, B 30, C 50 (R 2, 3,
// 5 on 100 GPUs). A's 40-GPU job is wider than A's partition: it
// scavenges C's 50 idle GPUs (the most idle other partition), 40 of them
// on C's books. B fills its own 30; B's next job (10) finds B full and
// cannot reclaim anything, since no lease is on B's books: it scavenges
// the most idle other partition, A's 20, instead. C's 20-GPU job fits C
// (50 − 0 held by C's owners) but only 10 of C's GPUs are idle: it needs
// 10 more, so A's lease, the only one on C's books, gets the notice; the
// grace (60 s) later it ends and C's job starts that tick.
func TestScavengerIsReclaimedWithGraceByTheOwnerOnly(t *testing.T) {
	a, j, ids := newStatic(t, 100, 60, scavenger(), 2, 3, 5)
	require.Equal(t, []int{50, 30, 20}, rule(a).Sizes())
	scav, err := a.RequestRigid(ids[0], 40, 1000, 1000, policy.AgentBurst, 1)
	require.NoError(t, err)
	a.Tick()
	owner, lent := rule(a).Books(a)
	require.Equal(t, []int{0, 0, 0}, owner)
	require.Equal(t, []int{40, 0, 0}, lent) // C is partition 0
	_, _ = a.RequestRigid(ids[1], 30, 1000, 1000, policy.AgentBurst, 2)
	_, _ = a.RequestRigid(ids[1], 10, 1000, 1000, policy.AgentBurst, 2)
	a.Tick()
	require.Equal(t, 40, a.Held(ids[1], policy.AnyClass))
	require.Empty(t, j.Of(policy.EventPreemptNotice), "B reclaims only from its own books")
	_, lent = rule(a).Books(a)
	require.Equal(t, []int{40, 0, 10}, lent)
	require.Equal(t, 20, a.Free()) // 10 idle in C, 10 in A
	own, err := a.RequestRigid(ids[2], 20, 1000, 1000, policy.AgentBurst, 3)
	require.NoError(t, err)
	a.Tick() // t = 3
	notices := j.Of(policy.EventPreemptNotice)
	require.Len(t, notices, 1)
	require.Equal(t, scav, notices[0].Lease, "the newest lease on C's books covering the need")
	require.Equal(t, 3, notices[0].T)
	bt.Ticks(a, 59)
	_, started := j.Grant(own)
	require.False(t, started, "the scavenger keeps its grace")
	a.Tick() // t = 63: the grace has run
	pre := j.Released(policy.ReasonPreempted)
	require.Len(t, pre, 1)
	require.Equal(t, 63, pre[0].T)
	g, started := j.Grant(own)
	require.True(t, started)
	require.Equal(t, 63, g.T)
}

// Newest first, minimal set (§6.6): two scavenger leases of 10 GPUs on B's
// books (granted at ticks 1 and 2), B needs 10: only the newer one goes.
func TestReclaimNewestFirstMinimalSet(t *testing.T) {
	a, j, ids := newStatic(t, 40, 5, scavenger(), 1, 1)
	// Partitions 20 and 20. c0 fills its own 20, then scavenges c1's.
	_, _ = a.RequestRigid(ids[0], 20, 1000, 1000, policy.AgentBurst, 1)
	a.Tick()
	old, _ := a.RequestRigid(ids[0], 10, 1000, 1000, policy.AgentBurst, 2)
	a.Tick()
	young, _ := a.RequestRigid(ids[0], 10, 1000, 1000, policy.AgentBurst, 3)
	a.Tick()
	_, lent := rule(a).Books(a)
	require.Equal(t, []int{0, 20}, lent)
	_, _ = a.RequestRigid(ids[1], 10, 1000, 1000, policy.AgentBurst, 4)
	a.Tick()
	n := j.Of(policy.EventPreemptNotice)
	require.Len(t, n, 1)
	require.Equal(t, young, n[0].Lease)
	require.NotEqual(t, old, n[0].Lease)
}

// Pricing (§2): under static no one preempts an owner's lease, so an
// opportunistic request served in its partition is priced as agent-burst
// (3 credits per GPU-hour, not 0.25); the backfill's scavenger lease can be
// preempted and keeps the opportunistic price. Under lend none the
// backfill gets nothing (§6.2).
func TestNoOneCanPreemptPaysTheNonPreemptiblePrice(t *testing.T) {
	a, j, ids := newStatic(t, 100, 60, static.DefaultKnobs(), 1)
	fill, err := a.Register(bt.Env("backfill", 0, policy.Opportunistic))
	require.NoError(t, err)
	require.Equal(t, []int{100}, rule(a).Sizes())
	id, _ := a.Request(ids[0], 36, 3600, policy.Opportunistic)
	_, _ = a.Request(fill, 20, 3600, policy.AnyClass)
	require.Equal(t, 0, a.Supply(fill).Free)
	a.Tick()
	g, ok := j.Grant(id)
	require.True(t, ok)
	require.Equal(t, policy.AgentBurst, g.Class)
	require.Equal(t, 36, a.Held(ids[0], policy.Opportunistic), "the agent's own books keep its label")
	require.Equal(t, 0, a.Held(fill, policy.AnyClass))
	before := a.Credits(ids[0])
	bt.Ticks(a, 100)
	// 36 GPUs × 100 s × 3 / 3600 = 3 credits.
	require.InEpsilon(t, 3.0, before-a.Credits(ids[0]), 1e-4)

	a, j, ids = newStatic(t, 100, 60, scavenger(), 1)
	fill, _ = a.Register(bt.Env("backfill", 0, policy.Opportunistic))
	require.Equal(t, 100, a.Supply(fill).Free)
	fid, _ := a.Request(fill, 64, 3600, policy.AnyClass)
	a.Tick()
	g, ok = j.Grant(fid)
	require.True(t, ok)
	require.Equal(t, policy.Opportunistic, g.Class)
	// The owner asks 80: 36 are idle, and min(80, 36) ≥ 16, so it gets 36
	// now and, as the broker does for the rest of a partial grant
	// (model.md §5), the backfill's lease is noticed for the other 44.
	_, _ = a.Request(ids[0], 80, 3600, policy.AnyClass)
	a.Tick()
	require.Len(t, j.Of(policy.EventPreemptNotice), 1)
	require.Equal(t, 36, a.Held(ids[0], policy.AnyClass))
	bt.Ticks(a, 60)
	require.Equal(t, 100, a.Supply(ids[0]).Free+a.Held(ids[0], policy.AnyClass))
}

// Partitions cover the pool (§6.15) for any shares and owners.
func TestPartitionsAlwaysSumToThePool(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		pool := rapid.IntRange(1, 600).Draw(t, "pool")
		k := static.DefaultKnobs()
		k.Owners = rapid.IntRange(0, 10).Draw(t, "owners")
		a, err := static.New(bt.Config(pool, 0), k)
		require.NoError(t, err)
		n := rapid.IntRange(1, 14).Draw(t, "campaigns")
		for i := range n {
			r := rapid.SampledFrom([]float64{0, 0.5, 1, 3, 7, 1e-3, 1e4}).Draw(t, "R")
			_, err := a.Register(bt.Env(fmt.Sprintf("c%d", i), r, policy.AgentBurst))
			require.NoError(t, err)
		}
		sum := 0
		for _, s := range rule(a).Sizes() {
			require.GreaterOrEqual(t, s, 0)
			sum += s
		}
		require.Equal(t, pool, sum)
		require.LessOrEqual(t, len(rule(a).Sizes()), k.Owners+1)
	})
}

// No owner's job that fits its partition waits while a scavenger holds the
// partition's GPUs beyond the grace (§6.19): whenever the head of a
// partition's queue fits what its owners do not hold and scavengers hold
// some of the partition's GPUs, within grace + 1 ticks either that head has
// started or no scavenger is left on the partition's books. (Scavengers may
// come and go meanwhile in GPUs the head does not need.)
func TestOwnerNeverWaitsBeyondTheGrace(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		pool := rapid.SampledFrom([]int{8, 16, 64}).Draw(t, "pool")
		grace := rapid.IntRange(0, 8).Draw(t, "grace")
		k := scavenger()
		k.Owners = rapid.IntRange(1, 3).Draw(t, "owners")
		a, err := static.New(bt.Config(pool, grace), k)
		require.NoError(t, err)
		n := rapid.IntRange(2, 5).Draw(t, "campaigns")
		var ids []policy.CampaignID
		for i := range n {
			id, _ := a.Register(bt.Env(fmt.Sprintf("c%d", i), float64(rapid.IntRange(1, 5).Draw(t, "R")), policy.AgentBurst))
			ids = append(ids, id)
		}
		if rapid.Bool().Draw(t, "backfill") {
			fill, _ := a.Register(bt.Env("backfill", 0, policy.Opportunistic))
			ids = append(ids, fill)
		}
		r := rule(a)
		since := map[int]int{}  // partition → first tick of the condition
		headOf := map[int]int{} // partition → the head it holds for
		for range rapid.IntRange(10, 200).Draw(t, "ticks") {
			if rapid.IntRange(0, 2).Draw(t, "arrive") == 0 {
				c := ids[rapid.IntRange(0, len(ids)-1).Draw(t, "c")]
				g := rapid.IntRange(1, pool).Draw(t, "gpus")
				d := rapid.IntRange(1, 40).Draw(t, "run")
				if a.Campaign(c).Filler {
					_, _ = a.Request(c, g, d, policy.AnyClass)
				} else {
					_, _ = a.RequestRigid(c, g, d, d, policy.AgentBurst, a.Now()+1)
				}
			}
			a.Tick()
			owner, lent := r.Books(a)
			// A partition's head is its first job in submit order (the
			// Core keeps no order while it holds only rigid jobs:
			// baseline.UnorderedPending).
			heads := map[int]*baseline.Request{}
			for i := range a.Pending() {
				q := &a.Pending()[i]
				p, size := r.Partition(q.Campaign)
				if h := heads[p]; p >= 0 && q.GPUs <= size && (h == nil || q.Submitted < h.Submitted || q.Submitted == h.Submitted && q.ID < h.ID) {
					heads[p] = q
				}
			}
			for p, size := range r.Sizes() {
				h := heads[p]
				if h == nil || lent[p] == 0 || h.GPUs > size-owner[p] {
					delete(since, p)
					continue
				}
				if _, ok := since[p]; !ok || headOf[p] != h.ID {
					since[p], headOf[p] = a.Now(), h.ID
				}
				if a.Now()-since[p] > grace+1 {
					t.Fatalf("partition %d: head %d (%d GPUs, owners hold %d of %d) has waited since %d with %d GPUs lent", p, h.ID, h.GPUs, owner[p], size, since[p], lent[p])
				}
			}
		}
	})
}

func TestKnobsAreChecked(t *testing.T) {
	_, err := static.New(bt.Config(8, 0), static.Knobs{Owners: -1, Lend: static.LendNone})
	require.ErrorContains(t, err, "owners must be ≥ 0")
	_, err = static.New(bt.Config(8, 0), static.Knobs{Owners: 8, Lend: "borrow"})
	require.ErrorContains(t, err, `lend must be "none" or "scavenger", got "borrow"`)
}

// scavenge finds each job it walks where it stood when gathered, less the
// grants before it in the pass (Core.Grant moves the requests behind a
// granted one up one place): twin allocators, one looking every job up by
// id, give the same journal tick by tick, and the other never misses.
// Several jobs arrive at a tick, some submitted in the past (a requeued
// job's place), so that a pass scavenges several, between and behind
// others.
func TestScavengePositionsFollowTheGrants(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		pool := rapid.SampledFrom([]int{8, 16, 32}).Draw(t, "pool")
		grace := rapid.IntRange(0, 4).Draw(t, "grace")
		kn := scavenger()
		kn.Owners = rapid.IntRange(1, 3).Draw(t, "owners")
		twins, journals := journaledTwins(t, pool, grace, kn)
		static.PlainScavenge(rule(twins[1]))
		n := rapid.IntRange(2, 5).Draw(t, "campaigns")
		backfill := rapid.Bool().Draw(t, "backfill")
		var ids []policy.CampaignID
		for _, a := range twins {
			ids = ids[:0]
			for i := range n {
				id, _ := a.Register(bt.Env(fmt.Sprintf("c%d", i), float64(i%3+1), policy.AgentBurst))
				ids = append(ids, id)
			}
			if backfill {
				fill, _ := a.Register(bt.Env("backfill", 0, policy.Opportunistic))
				ids = append(ids, fill)
			}
		}
		for tick := range rapid.IntRange(10, 150).Draw(t, "ticks") {
			for range rapid.IntRange(0, 4).Draw(t, "arrivals") {
				c := ids[rapid.IntRange(0, len(ids)-1).Draw(t, "c")]
				g := rapid.IntRange(1, pool).Draw(t, "gpus")
				d := rapid.IntRange(1, 30).Draw(t, "run")
				back := rapid.IntRange(0, 3).Draw(t, "back")
				for _, a := range twins {
					if a.Campaign(c).Filler {
						_, _ = a.Request(c, g, d, policy.AnyClass)
					} else {
						_, _ = a.RequestRigid(c, g, d, d, policy.AgentBurst, max(0, a.Now()+1-back))
					}
				}
			}
			for _, a := range twins {
				a.Tick()
			}
			require.Equal(t, journals[1].Events, journals[0].Events, "tick %d", tick)
			require.Zero(t, static.Relooked(rule(twins[0])), "tick %d: jobs not where the grants left them", tick)
		}
	})
}
