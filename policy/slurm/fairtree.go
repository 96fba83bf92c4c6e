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

// fairTree is the scratch of one ranking.
type fairTree struct {
	accounts, users []treeNode
}

// factors writes every campaign's Fair Tree factor into out (len ≥ the
// campaigns), from each campaign's decayed usage.
func (t *fairTree) factors(k *baseline.Core, usage []float64, out []float64) {
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
	t.accounts = t.accounts[:0]
	for g := range groups {
		u := 0.0
		for _, c := range groups[g].Members {
			u += usage[c]
		}
		t.accounts = append(t.accounts, treeNode{g, levelFS(groups[g].Share, groupShares, u, root)})
	}
	sortByLF(t.accounts)
	rank, rnt := users, users
	for x, a := range t.accounts {
		tied := x > 0 && t.accounts[x-1].lf == a.lf
		members := groups[a.idx].Members
		shares, u := 0.0, 0.0
		for _, c := range members {
			shares += k.Campaign(c).Share
			u += usage[c]
		}
		t.users = t.users[:0]
		for _, c := range members {
			t.users = append(t.users, treeNode{int(c), levelFS(k.Campaign(c).Share, shares, usage[c], u)})
		}
		sortByLF(t.users)
		for y, n := range t.users {
			if !(y == 0 && tied || y > 0 && t.users[y-1].lf == n.lf) {
				rank = rnt
			}
			out[n.idx] = float64(rank) / float64(users)
			rnt--
		}
	}
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

// sortByLF sorts siblings by LF, highest first, ties in their own order
// (the nodes come in that order, by ascending idx).
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
