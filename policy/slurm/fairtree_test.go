package slurm

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/stretchr/testify/require"

	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/baseline"
	bt "github.com/bursar-hpc/bursar/policy/baseline/baselinetest"
)

// treeCore is a Core holding three accounts, A (0.5 of the pool: users a1
// and a2, 0.25 each), B (0.3: b1) and C (0.2: c1 and c2, 0.1 each).
func treeCore(t *testing.T) *baseline.Core {
	t.Helper()
	k, err := baseline.New(bt.Config(10, 0), NewRule(DefaultKnobs()))
	require.NoError(t, err)
	require.NoError(t, k.SetEntitlements(&baseline.Entitlements{Groups: []baseline.GroupShare{
		{Name: "A", Share: 0.5, Members: []baseline.MemberShare{{Name: "a1", Share: 0.25}, {Name: "a2", Share: 0.25}}},
		{Name: "B", Share: 0.3, Members: []baseline.MemberShare{{Name: "b1", Share: 0.3}}},
		{Name: "C", Share: 0.2, Members: []baseline.MemberShare{{Name: "c1", Share: 0.1}, {Name: "c2", Share: 0.1}}},
	}}))
	for _, n := range []string{"a1", "a2", "b1", "c1", "c2"} {
		_, err := k.Register(bt.Env(n, 1, policy.AgentBurst))
		require.NoError(t, err)
	}
	return k
}

// Fair Tree's rank order, worked by hand. Usage (a1, a2, b1, c1, c2) =
// (30, 10, 40, 0, 20), 100 in all.
//
// Accounts, LF = S / U with S the shares ÷ the siblings' and U the usage
// ÷ the root's: A 0.5 / 0.4 = 1.25; B 0.3 / 0.4 = 0.75; C 0.2 / 0.2 = 1.
// Order A, C, B. Users, U within their account: a1 0.5 / 0.75 = 0.667,
// a2 0.5 / 0.25 = 2: a2 then a1; c1 0.5 / 0 = +Inf, c2 0.5 / 1 = 0.5: c1
// then c2; b1 1 / 1. Depth first, ranks counting down from 5 users: a2 5,
// a1 4, c1 3, c2 2, b1 1; factor = rank / 5.
//
// c1 has used nothing yet ranks below a1, who used 30: its account C has
// used its share, A less than its share. Classic fair share ranks c1 first
// (F = 2^(−U/S) = 1) and then a2 (2^(−0.1/0.25) = 0.758), a1 (2^(−1.2) =
// 0.435), b1 (2^(−4/3) = 0.397), c2 (2^(−2) = 0.25).
func TestFairTreeRanksByAccountFirst(t *testing.T) {
	k := treeCore(t)
	usage := []float64{30, 10, 40, 0, 20}
	got := make([]float64, 5)
	var tree fairTree
	tree.factors(k, usage, got)
	require.InDeltaSlice(t, []float64{0.8, 1.0, 0.2, 0.6, 0.4}, got, 1e-12)

	classicFactors(k, usage, got)
	require.InDeltaSlice(t, []float64{0.43527528164806206, 0.757858283255199, 0.39685026299204984, 1, 0.25}, got, 1e-12)
}

// Ties, worked by hand: with a1 and a2 at 0 usage (b1 40, c1 0, c2 20),
// A has used nothing (LF +Inf) and comes first; a1 and a2 both have
// LF +Inf, so a2 keeps a1's rank 5 (Slurm's "sibling users with the same
// level_fs receive the same rank") while the count goes on: C's LF
// 0.2 / (20/60) = 0.6 is above B's 0.3 / (40/60) = 0.45, c1 (+Inf) takes
// rank 3, c2 2, b1 1.
func TestFairTreeTiedUsersShareARank(t *testing.T) {
	k := treeCore(t)
	got := make([]float64, 5)
	var tree fairTree
	tree.factors(k, []float64{0, 0, 40, 0, 20}, got)
	require.InDeltaSlice(t, []float64{1.0, 1.0, 0.2, 0.6, 0.4}, got, 1e-12)
}

// freshFactors is Fair Tree's ranking computed from nothing, every list
// sorted afresh: the oracle of fairTree.factors, which keeps each list in
// the order its last ranking left and sorts it from there.
func freshFactors(k *baseline.Core, usage []float64, out []float64) {
	clear(out)
	groups := k.Groups()
	users, groupShares, root := 0, 0.0, 0.0
	for g := range groups {
		users += len(groups[g].Members)
		groupShares += groups[g].Share
		for _, c := range groups[g].Members {
			root += usage[c]
		}
	}
	if users == 0 {
		return
	}
	var accounts []treeNode
	for g := range groups {
		u := 0.0
		for _, c := range groups[g].Members {
			u += usage[c]
		}
		accounts = append(accounts, treeNode{g, levelFS(groups[g].Share, groupShares, u, root)})
	}
	sortByLF(accounts)
	rank, rnt := users, users
	for x, a := range accounts {
		tied := x > 0 && accounts[x-1].lf == a.lf
		shares, u := 0.0, 0.0
		for _, c := range groups[a.idx].Members {
			shares += k.Campaign(c).Share
			u += usage[c]
		}
		var ns []treeNode
		for _, c := range groups[a.idx].Members {
			ns = append(ns, treeNode{int(c), levelFS(k.Campaign(c).Share, shares, usage[c], u)})
		}
		sortByLF(ns)
		for y, n := range ns {
			if !(y == 0 && tied || y > 0 && ns[y-1].lf == n.lf) {
				rank = rnt
			}
			out[n.idx] = float64(rank) / float64(users)
			rnt--
		}
	}
}

// TestFairTreeFromLastRankingIsFresh: one fairTree ranking a random tree
// period after period (usage decayed, charged, zeroed, tied, swapped,
// campaigns registered between periods) gives, factor for factor, what
// a ranking from nothing writes at each period: every factor at once, or
// a few campaigns' asked in any order (the accounts sorted as asked),
// the sums over every member or over the live ones only (begin's live:
// each campaign listed once its usage is not +0, in that order, some
// listed early, and kept listed when their usage is zeroed again). A
// ranking that skipped a live member, or missed the campaigns listed
// since its last, ranks differently here.
func TestFairTreeFromLastRankingIsFresh(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var groups []baseline.GroupShare
		names := 0
		for g := range rapid.IntRange(1, 6).Draw(t, "groups") {
			// Members' shares sum to their group's.
			gs := baseline.GroupShare{Name: fmt.Sprintf("g%d", g)}
			for range rapid.IntRange(0, 6).Draw(t, "members") {
				s := rapid.SampledFrom([]float64{0, 0.01, 0.02}).Draw(t, "share")
				gs.Members = append(gs.Members, baseline.MemberShare{Name: fmt.Sprintf("u%d", names), Share: s})
				gs.Share += s
				names++
			}
			groups = append(groups, gs)
		}
		k, err := baseline.New(bt.Config(10, 0), NewRule(DefaultKnobs()))
		if err != nil {
			t.Fatal(err)
		}
		if err := k.SetEntitlements(&baseline.Entitlements{Groups: groups}); err != nil {
			t.Fatal(err)
		}
		taken := map[string]bool{}
		register := func() {
			// A named member, or one in no group (a group of its own).
			n := rapid.IntRange(0, names).Draw(t, "register")
			name := fmt.Sprintf("u%d", n)
			if n == names || taken[name] {
				name = fmt.Sprintf("x%d", k.NumCampaigns())
			}
			taken[name] = true
			if _, err := k.Register(bt.Env(name, 1, policy.AgentBurst)); err != nil {
				t.Fatal(err)
			}
		}
		register()
		var tree fairTree
		var usage []float64
		var live []int
		listed := map[int]bool{}
		list := func(c int) {
			if !listed[c] {
				listed[c] = true
				live = append(live, c)
			}
		}
		for p := range rapid.IntRange(1, 30).Draw(t, "periods") {
			if rapid.IntRange(0, 4).Draw(t, "registers") == 0 {
				register()
			}
			for len(usage) < k.NumCampaigns() {
				usage = append(usage, 0)
			}
			for c := range usage {
				switch rapid.IntRange(0, 5).Draw(t, "move") {
				case 0:
					usage[c] = 0
				case 1:
					usage[c] += float64(rapid.IntRange(0, 100).Draw(t, "charge"))
				case 2:
					usage[c] = usage[rapid.IntRange(0, len(usage)-1).Draw(t, "tie")]
				default:
					usage[c] *= 0.9
				}
				if usage[c] != 0 || rapid.IntRange(0, 9).Draw(t, "early") == 0 {
					list(c)
				}
			}
			want := make([]float64, len(usage))
			freshFactors(k, usage, want)
			if rapid.Bool().Draw(t, "all") {
				got := make([]float64, len(usage))
				tree.factors(k, usage, got)
				if !slices.Equal(got, want) {
					t.Fatalf("period %d, usage %v: ranked %v, afresh %v", p, usage, got, want)
				}
				continue
			}
			// A few campaigns asked, in any order, some twice.
			if rapid.Bool().Draw(t, "live") {
				tree.begin(k, usage, live)
			} else {
				tree.begin(k, usage, nil)
			}
			for range rapid.IntRange(0, 2*len(usage)).Draw(t, "asks") {
				c := rapid.IntRange(0, len(usage)-1).Draw(t, "ask")
				if got := tree.factor(c); got != want[c] {
					t.Fatalf("period %d, usage %v: campaign %d ranked %v, afresh %v", p, usage, c, got, want[c])
				}
			}
		}
	})
}

// The usage books hear of every holding that changes (HoldChanged): a
// job of 4 GPUs submitted at tick 5, on an idle pool, holds them in
// ticks 5…10 of the calculation period 1…10, so its campaign's usage at
// the period's end is 4·6 GPU-seconds (nothing before it to decay). The
// books read a campaign's holding again only when the Core names it, and
// the Core names it to its rule: without passing the note on they still
// read 0 from tick 1.
func TestUsageBooksSeeEveryHolding(t *testing.T) {
	knobs := DefaultKnobs()
	knobs.WFairshare, knobs.CalcPeriod = 1000, 10
	r := NewRule(knobs)
	k, err := baseline.New(bt.Config(8, 0), r)
	if err != nil {
		t.Fatal(err)
	}
	c, err := k.Register(bt.Env("a", 1, policy.AgentBurst))
	if err != nil {
		t.Fatal(err)
	}
	for k.Now() < 4 {
		k.Tick()
	}
	if _, err := k.RequestRigid(c, 4, 100, 100, policy.AgentBurst, 5); err != nil {
		t.Fatal(err)
	}
	for k.Now() < 12 {
		k.Tick()
	}
	if got := k.Held(c, policy.AnyClass); got != 4 {
		t.Fatalf("campaign holds %d GPUs at tick %d, want 4", got, k.Now())
	}
	if got := r.usage.Usage(c); got != 24 {
		t.Fatalf("usage %v at tick %d, want 24 (4 GPUs over ticks 5…10)", got, k.Now())
	}
}

// sortFromLast sorts as sortByLF does from any start: in order already
// (its shortcut returns at once), a few moves away, turned over, with
// ties of LF (ordered by index), +Inf and NaN, and −0 and −1, which no
// usage makes (the shortcut compares bits). A shortcut that took a list
// in LF order but not in index order among ties for sorted, or one that
// missed a NaN, fails here.
func TestSortFromLastIsSortByLF(t *testing.T) {
	// By hand: a NaN first, or between two nodes in order, leaves no
	// pair out of order by > and ==, and sorts last.
	nan := math.NaN()
	for _, c := range []struct{ in, want []treeNode }{
		{[]treeNode{{0, nan}, {1, 2}, {2, 1}}, []treeNode{{1, 2}, {2, 1}, {0, nan}}},
		{[]treeNode{{0, 2}, {1, nan}, {2, 1}}, []treeNode{{0, 2}, {2, 1}, {1, nan}}},
		{[]treeNode{{1, 1}, {0, 1}}, []treeNode{{0, 1}, {1, 1}}},
		{[]treeNode{{0, 2}, {1, 1}, {2, -1}}, []treeNode{{0, 2}, {1, 1}, {2, -1}}},
		{[]treeNode{{0, -1}, {1, 0}}, []treeNode{{1, 0}, {0, -1}}},
	} {
		got := slices.Clone(c.in)
		sortFromLast(got)
		for i := range got {
			if got[i].idx != c.want[i].idx {
				t.Fatalf("sortFromLast(%v) = %v, want %v", c.in, got, c.want)
			}
		}
	}
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 40).Draw(t, "n")
		lfs := []float64{0, 0.5, 1, 2, math.Inf(1), math.Copysign(0, -1), -1, math.NaN()}
		nan := rapid.Bool().Draw(t, "nan")
		ns := make([]treeNode, n)
		for i := range ns {
			top := len(lfs) - 1
			if !nan {
				top--
			}
			ns[i] = treeNode{idx: i, lf: lfs[rapid.IntRange(0, top).Draw(t, "lf")]}
		}
		rapid.SampledFrom([]func([]treeNode){
			func([]treeNode) {},
			sortByLF,
			func(ns []treeNode) {
				sortByLF(ns)
				for range rapid.IntRange(0, 3).Draw(t, "swaps") {
					if len(ns) > 1 {
						i := rapid.IntRange(0, len(ns)-2).Draw(t, "at")
						ns[i], ns[i+1] = ns[i+1], ns[i]
					}
				}
			},
			func(ns []treeNode) { sortByLF(ns); slices.Reverse(ns) },
		}).Draw(t, "start")(ns)
		got, want := slices.Clone(ns), slices.Clone(ns)
		sortFromLast(got)
		sortByLF(want)
		for i := range got {
			if got[i].idx != want[i].idx {
				t.Fatalf("sortFromLast %v, sortByLF %v", got, want)
			}
		}
	})
}
