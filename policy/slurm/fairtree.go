package slurm

import (
	"cmp"
	"math"
	"slices"

	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/baseline"
)

// Fair Tree (https://slurm.schedmd.com/fair_tree.html;
// src/plugins/priority/multifactor/fair_tree.c at slurm-22-05-9-1) on the
// two-level account tree of the entitlements: the root's children are the
// groups (accounts, shares = the group's entitlement), each group's
// children its members (users, shares = the member's entitlement).
//
//   - Level Fairshare of an association: LF = S / U, S its shares ÷ the
//     shares of it and its siblings, U its usage ÷ its parent's usage
//     (_calc_assoc_fs; U = 0 when the parent has none: LF = +Inf; S = 0
//     gives LF = 0).
//   - Siblings are sorted by LF, highest first (_cmp_level_fs), and walked
//     depth first (_calc_tree_fs): each user in turn takes the rank
//     rnt, which counts down from the number of users, and its factor is
//     rank ÷ the number of users.
//   - Ties (_calc_tree_fs): a user whose LF equals its previous
//     sibling's keeps that sibling's rank (rnt still counts down); an
//     account whose LF equals its previous sibling's starts tied, so its
//     first user keeps the rank last given. (Slurm would also merge the
//     children of tied accounts, but _count_tied_accounts stops at the
//     first sibling that is an account, so among accounts alone it never
//     merges; this follows what the code does.)
//   - **Choice**: among siblings of equal LF the order is the groups' and
//     the members' own (Slurm's qsort leaves it unspecified).
//
// The filler is in no group and gets 0.

// treeNode is one association in a sort: its index and its LF.
type treeNode struct {
	idx int
	lf  float64
}

// fairTree is the scratch of the rankings. The tree's shape (the groups,
// their members and every share) changes only with the Core's shares
// (baseline.Core.SharesEpoch: a registration, new entitlements), so it is
// laid out flat once per epoch. The usage moves little from one
// calculation period to the next, so each sibling list keeps the order
// the last ranking left it in and is sorted from there, by insertion: a
// pass over a list still in order costs one comparison a node, where a
// fresh sort of every list at every period was most of a weighted replay
// (7.6 s of 10.4 on SDSC-SP2 with the example site's weights). The order
// is total (LF, then the index), so any starting order sorts to the same
// list. And a ranking (begin) orders the accounts only: a user's rank
// (factor) needs its own account's users in order, and those of the
// accounts tied with it before it, so only the accounts of the campaigns
// that have a job waiting are ever sorted.
type fairTree struct {
	built bool
	epoch uint64
	// count is the members of every group; groupShares sums the groups'
	// shares, in their order.
	count       int
	groupShares float64
	// Per group g: its members are mems[start[g]:start[g+1]]. Per
	// campaign c: part[c] is its share ÷ its siblings' (the first
	// division of levelFS, the same bits), none[c] whether levelFS is 0
	// for it whatever the usage (no share of its own or among siblings),
	// group[c] its group (−1: none, as the filler).
	start []int
	mems  []int
	// memGroup[j] is the group of member mems[j], and memAt[c] campaign
	// c's place j in mems (−1: in no group).
	memGroup []int
	memAt    []int
	part     []float64
	none     []bool
	group    []int
	// frac[r] is rank r's factor, r ÷ count.
	frac []float64
	// Per group g: gpart[g] is its share ÷ the groups' (levelFS's first
	// division, the same bits), gnone[g] whether its LF is 0 whatever
	// the usage: what of an account's LF the usage does not move.
	gpart []float64
	gnone []bool
	// liveMems are the places in mems, in order, of the campaigns of the
	// usage books' live list (fairshare.Rule.Live: those whose usage may
	// not be +0), of which the first liveSeen were placed this epoch.
	liveMems []int
	liveSeen int

	// The ranking: its stamp (from 1, one a begin), the usage it ranks
	// (a copy) and each account's, the accounts in order (kept from the
	// last ranking) and by position x in that order the members in the
	// accounts before it (before[x]); by group its position (posOf) and
	// the stamp its users were last sorted at; users holds every group's
	// members, users[start[g]:start[g+1]] for g, in the order of its last
	// sort, and pos[c] is campaign c's place there as of that sort.
	// after[x] memoizes (at stamp afterAt[x]) the rank in effect after
	// the account at x, and fs[c] (at fsAt[c]) campaign c's factor.
	stamp           uint64
	usage           []float64
	acctUsage       []float64
	accounts, users []treeNode
	before, posOf   []int
	sortedAt        []uint64
	pos             []int
	after           []int
	afterAt         []uint64
	fs              []float64
	fsAt            []uint64
}

// shape lays the tree out from k's groups, at a new shares epoch.
func (t *fairTree) shape(k *baseline.Core) {
	groups := k.Groups()
	n := k.NumCampaigns()
	t.built, t.epoch = true, k.SharesEpoch()
	t.count, t.groupShares = 0, 0
	t.start, t.mems, t.memGroup = t.start[:0], t.mems[:0], t.memGroup[:0]
	t.part = baseline.Cleared(t.part, n)
	t.none = baseline.Flags(t.none, n)
	t.group = baseline.Ints(t.group, n)
	t.memAt = baseline.Ints(t.memAt, n)
	for c := range t.group {
		t.group[c], t.memAt[c] = -1, -1
	}
	t.liveMems, t.liveSeen = t.liveMems[:0], 0
	t.pos = baseline.Ints(t.pos, n)
	t.fs = baseline.Cleared(t.fs, n)
	t.fsAt = baseline.Cleared(t.fsAt, n)
	t.accounts, t.users = t.accounts[:0], t.users[:0]
	for g := range groups {
		t.count += len(groups[g].Members)
		t.groupShares += groups[g].Share
		t.start = append(t.start, len(t.mems))
		shares := 0.0
		for y, c := range groups[g].Members {
			shares += k.Campaign(c).Share
			t.memAt[c] = len(t.mems)
			t.mems = append(t.mems, int(c))
			t.memGroup = append(t.memGroup, g)
			t.users = append(t.users, treeNode{idx: int(c)})
			t.group[c], t.pos[c] = g, y
		}
		for _, c := range groups[g].Members {
			s := k.Campaign(c).Share
			t.none[c] = s <= 0 || shares <= 0
			if !t.none[c] {
				t.part[c] = s / shares
			}
		}
		t.accounts = append(t.accounts, treeNode{idx: g})
	}
	t.start = append(t.start, len(t.mems))
	t.gpart = baseline.Cleared(t.gpart, len(groups))
	t.gnone = baseline.Flags(t.gnone, len(groups))
	for g := range groups {
		s := groups[g].Share
		t.gnone[g] = s <= 0 || t.groupShares <= 0
		if !t.gnone[g] {
			t.gpart[g] = s / t.groupShares
		}
	}
	t.acctUsage = baseline.Cleared(t.acctUsage, len(groups))
	t.before = baseline.Ints(t.before, len(groups))
	t.posOf = baseline.Ints(t.posOf, len(groups))
	t.after = baseline.Ints(t.after, len(groups))
	t.sortedAt = baseline.Cleared(t.sortedAt, len(groups))
	t.afterAt = baseline.Cleared(t.afterAt, len(groups))
	t.frac = baseline.Cleared(t.frac, t.count+1)
	for r := range t.frac {
		t.frac[r] = float64(r) / float64(t.count)
	}
	t.stamp = 0
}

// factors writes every campaign's Fair Tree factor into out (len ≥ the
// campaigns), from each campaign's decayed usage.
func (t *fairTree) factors(k *baseline.Core, usage []float64, out []float64) {
	clear(out)
	t.begin(k, usage, nil)
	for c := range t.group {
		out[c] = t.factor(c)
	}
}

// begin starts a ranking of usage (copied): the accounts in order. live,
// unless nil, lists (in any order, each once) every campaign whose usage
// is not +0, and may list others: it only grows from one ranking to the
// next of a shares epoch (the usage books' live list).
func (t *fairTree) begin(k *baseline.Core, usage []float64, live []int) {
	if !t.built || t.epoch != k.SharesEpoch() {
		t.shape(k)
	}
	t.stamp++
	t.usage = append(t.usage[:0], usage...)
	if t.count == 0 {
		return
	}
	groups := k.Groups()
	// The root's usage sums every member in group order, and each
	// account's its own members from 0: the sums as Slurm's walk adds
	// them, bit for bit.
	// The tables in locals: a store through one of the fairTree's
	// slices may alias the fairTree for the compiler, which then loads
	// every other slice again at each member (a third of a ranking).
	// One walk of every member, each added to its group's sum in place
	// (from +0, as a sum begun at 0: the same bits), not a loop per
	// group: groups of a few members each paid a slice's set-up.
	mems, memGroup, acct := t.mems, t.memGroup[:len(t.mems)], t.acctUsage[:len(groups)]
	clear(acct)
	root := 0.0
	if live != nil {
		for _, c := range live[t.liveSeen:] {
			if j := t.memAt[c]; j >= 0 {
				x, _ := slices.BinarySearch(t.liveMems, j)
				t.liveMems = slices.Insert(t.liveMems, x, j)
			}
		}
		t.liveSeen = len(live)
	}
	if live == nil || 6*len(t.liveMems) >= 5*len(mems) {
		// Every member: with most of them live, fewer instructions
		// than a walk through the live ones' places (15 a member
		// against 18 a live one), the others adding +0.
		for j, c := range mems {
			v := usage[c]
			root += v
			acct[memGroup[j]] += v
		}
	} else {
		// Only the live members, in the same order: the others' usage
		// is +0, which added to a sum begun at +0 leaves its bits as
		// they are. On SDSC-SP2 a third of the members at a ranking
		// had not yet run a job.
		for _, j := range t.liveMems {
			v := usage[mems[j]]
			root += v
			acct[memGroup[j]] += v
		}
	}
	start := t.start[:len(groups)+1]
	// levelFS of each account, its usage-free division done once per
	// epoch (shape): the same bits.
	accounts, gnone, gpart := t.accounts, t.gnone[:len(acct)], t.gpart[:len(acct)]
	for x := range accounts {
		a := &accounts[x]
		switch g := a.idx; {
		case gnone[g]:
			a.lf = 0
		case root <= 0 || acct[g] <= 0:
			a.lf = math.Inf(1)
		default:
			a.lf = gpart[g] / (acct[g] / root)
		}
	}
	sortFromLast(accounts)
	before, posOf := t.before[:len(accounts)], t.posOf[:len(acct)]
	n := 0
	for x, a := range accounts {
		before[x], posOf[a.idx] = n, x
		n += start[a.idx+1] - start[a.idx]
	}
}

// members returns group g's users in this ranking's order, sorting them
// first if they are not yet.
func (t *fairTree) members(g int) []treeNode {
	ns := t.users[t.start[g]:t.start[g+1]]
	if t.sortedAt[g] == t.stamp || len(ns) < 2 {
		// An only child's LF orders nothing.
		return ns
	}
	t.sortedAt[g] = t.stamp
	u := t.acctUsage[g]
	for y := range ns {
		n := &ns[y]
		switch c := n.idx; {
		case t.none[c]:
			n.lf = 0
		case u <= 0 || t.usage[c] <= 0:
			n.lf = math.Inf(1)
		default:
			n.lf = t.part[c] / (t.usage[c] / u)
		}
	}
	sortFromLast(ns)
	for y, n := range ns {
		t.pos[n.idx] = y
	}
	return ns
}

// factor is campaign c's factor in the ranking begun last: its rank ÷
// the users. Slurm's walk (_calc_tree_fs) gives the accounts' users,
// depth first, ranks counting down from the users: each user the count
// left at it, but a user whose LF equals its previous sibling's keeps
// that sibling's rank, and so does an account's first user when the
// account's LF equals the previous account's. So a user's rank is the
// count left at the first of its run of equal LFs in its account, or,
// when that run opens an account tied with the one before, the rank in
// effect after that one (rankAfter).
func (t *fairTree) factor(c int) float64 {
	g := t.group[c]
	if g < 0 {
		return 0
	}
	if t.fsAt[c] == t.stamp {
		return t.fs[c]
	}
	ns := t.members(g)
	y := t.pos[c]
	for y > 0 && ns[y-1].lf == ns[y].lf {
		y--
	}
	f := t.frac[t.rankAt(t.posOf[g], y)]
	t.fs[c], t.fsAt[c] = f, t.stamp
	return f
}

// rankAt is the rank of the first user of a run of equal LFs starting at
// place y of the account at position x.
func (t *fairTree) rankAt(x, y int) int {
	if y > 0 || x == 0 || t.accounts[x-1].lf != t.accounts[x].lf {
		return t.count - t.before[x] - y
	}
	return t.rankAfter(x - 1)
}

// rankAfter is the rank in effect after the account at position x: its
// last user's, or, with no users, the one in effect before it (the
// first rank, the count, before every account).
func (t *fairTree) rankAfter(x int) int {
	if t.afterAt[x] == t.stamp {
		return t.after[x]
	}
	var r int
	switch ns := t.members(t.accounts[x].idx); {
	case len(ns) > 0:
		y := len(ns) - 1
		for y > 0 && ns[y-1].lf == ns[y].lf {
			y--
		}
		r = t.rankAt(x, y)
	case x == 0:
		r = t.count
	default:
		r = t.rankAfter(x - 1)
	}
	t.after[x], t.afterAt[x] = r, t.stamp
	return r
}

// levelFS is S / U for shares s of siblings' total shares and usage u of
// the parent's usage parent.
func levelFS(s, shares, u, parent float64) float64 {
	if s <= 0 || shares <= 0 {
		return 0
	}
	if parent <= 0 || u <= 0 {
		return math.Inf(1)
	}
	return (s / shares) / (u / parent)
}

// sortFromLast sorts siblings already nearly in order (the last ranking's)
// by insertion, in sortByLF's order: LF, highest first, then the index.
// Past a few moves a node it sorts them afresh instead, so that a list
// the usage turned over costs n·log n, not n², and so it does a list
// holding a NaN (which no usage makes), whose order cmp.Compare defines.
// The order is total: the same list either way.
func sortFromLast(ns []treeNode) {
	// Nearly always the list is in order already (the usage moves
	// little in a period): a look at each pair, with no stores, on the
	// LFs' bits, which for +0 … +Inf order as the numbers do (an LF is
	// never below +0). A NaN or a sign bit is above +Inf's bits: the
	// list is then not taken for sorted, and the sort below orders it.
	if len(ns) == 0 {
		return
	}
	const inf = 0x7ff0000000000000
	sorted := math.Float64bits(ns[0].lf) <= inf
	for i := 1; sorted && i < len(ns); i++ {
		a, b := math.Float64bits(ns[i-1].lf), math.Float64bits(ns[i].lf)
		sorted = b < a || b == a && ns[i].idx > ns[i-1].idx
	}
	if sorted {
		return
	}
	budget := 4*len(ns) + 16
	for i := range ns {
		x, j := ns[i], i
		if x.lf != x.lf {
			sortByLF(ns)
			return
		}
		for j > 0 && (x.lf > ns[j-1].lf || x.lf == ns[j-1].lf && x.idx < ns[j-1].idx) {
			ns[j] = ns[j-1]
			j--
		}
		ns[j] = x
		if budget -= i - j; budget < 0 {
			sortByLF(ns)
			return
		}
	}
}

// sortByLF sorts siblings by LF, highest first, ties in their own order
// (by ascending idx).
func sortByLF(ns []treeNode) {
	if len(ns) < 2 {
		return
	}
	slices.SortFunc(ns, func(a, b treeNode) int {
		if c := cmp.Compare(b.lf, a.lf); c != 0 {
			return c
		}
		return cmp.Compare(a.idx, b.idx)
	})
}

// classicFactors writes classic fair share (PriorityFlags=NO_FAIR_TREE;
// https://slurm.schedmd.com/classic_fair_share.html), F = 2^(−U/S), U a
// campaign's usage ÷ everyone's (the filler's included) and S its
// entitlement, as policy/fairshare computes it; F = 1 with no usage
// anywhere, 0 for the filler and for S = 0.
func classicFactors(k *baseline.Core, usage []float64, out []float64) {
	total := 0.0
	for _, u := range usage {
		total += u
	}
	for c := range out {
		cp := k.Campaign(policy.CampaignID(c))
		switch {
		case cp.Filler || cp.Share <= 0:
			out[c] = 0
		case total <= 0:
			out[c] = 1
		default:
			out[c] = math.Exp2(-usage[c] / total / cp.Share)
		}
	}
}
