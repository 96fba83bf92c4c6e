package baseline

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/bursar-hpc/bursar/policy"
)

// Entitlements say who is entitled to what share of the pool
// (docs/studies.md §1): groups, each entitled to a fraction of the pool,
// and in each group its members (campaigns, by name), each entitled to its
// own fraction. A trace's mapping (trace.Workload.Entitlements) splits a
// group's entitlement equally among its members, as Slurm splits an
// account's shares among associations of equal RawShares; this type does
// not insist on it, so that a site may weigh members.
//
// Every share-based policy reads them the same way, through the Core: a
// campaign's entitlement is Campaign.Share (fairshare's S, budget's and
// quota's per-campaign rules), its group Campaign.Group, and the groups
// with their own entitlements Core.Groups (budget's upper level, static's
// partitions, quota's ClusterQueues). Without entitlements (the agent
// scenario) every campaign but the filler is a group of its own, entitled
// to its sustained rate R normalised over those campaigns.
type Entitlements struct {
	Groups []GroupShare `json:"groups" yaml:"groups"`
}

// GroupShare is one group: its name, its entitlement (a fraction of the
// pool) and its members.
type GroupShare struct {
	Name    string        `json:"name" yaml:"name"`
	Share   float64       `json:"share" yaml:"share"`
	Members []MemberShare `json:"members" yaml:"members"`
	// Widest is the GPUs of the group's widest job, 0 if unknown: a condo
	// partition (static's partitions: condo) is at least this wide.
	Widest int `json:"widest,omitempty" yaml:"widest,omitempty"`
}

// MemberShare is one member campaign of a group, by name, and its
// entitlement as a fraction of the pool.
type MemberShare struct {
	Name  string  `json:"name" yaml:"name"`
	Share float64 `json:"share" yaml:"share"`
}

// shareTolerance is how far the entitlements' sums may stray from what
// they sum to: they are fractions of float64 sums of GPU-seconds.
const shareTolerance = 1e-9

// Validate checks that every group and member is named, no campaign is in
// two groups, every share is a finite number ≥ 0, the groups' shares sum
// to at most 1 and each group's members to its own share.
func (e *Entitlements) Validate() error {
	seen := map[string]bool{}
	total := 0.0
	for i, g := range e.Groups {
		if g.Name == "" {
			return fmt.Errorf("entitlements: groups[%d]: name must not be empty", i)
		}
		if !validShare(g.Share) {
			return fmt.Errorf("entitlements: group %s: share %v: must be a finite number ≥ 0", g.Name, g.Share)
		}
		if g.Widest < 0 {
			return fmt.Errorf("entitlements: group %s: widest %d: must be ≥ 0 GPUs", g.Name, g.Widest)
		}
		sum := 0.0
		for _, m := range g.Members {
			if m.Name == "" {
				return fmt.Errorf("entitlements: group %s: a member has no name", g.Name)
			}
			if seen[m.Name] {
				return fmt.Errorf("entitlements: group %s: campaign %q is in two groups", g.Name, m.Name)
			}
			seen[m.Name] = true
			if !validShare(m.Share) {
				return fmt.Errorf("entitlements: group %s: member %s: share %v: must be a finite number ≥ 0", g.Name, m.Name, m.Share)
			}
			sum += m.Share
		}
		if math.Abs(sum-g.Share) > shareTolerance {
			return fmt.Errorf("entitlements: group %s: its members' shares sum to %v, not its share %v", g.Name, sum, g.Share)
		}
		total += g.Share
	}
	if total > 1+shareTolerance {
		return fmt.Errorf("entitlements: the groups' shares sum to %v, above 1", total)
	}
	return nil
}

func validShare(s float64) bool { return s >= 0 && !math.IsInf(s, 0) && !math.IsNaN(s) }

// Group is one group as the rules see it: its name, its entitlement (a
// fraction of the pool) and its registered members in registration order.
type Group struct {
	Name    string
	Share   float64
	Members []policy.CampaignID
	// Widest is GroupShare.Widest: its widest job's GPUs, 0 if unknown.
	Widest int
}

// SetEntitlements fixes the entitlements the campaigns registered from now
// on (and those registered already) are read against; nil restores the
// default (R normalised, each campaign a group of its own). A campaign
// named in no group while entitlements are set is a group of its own, and
// the campaigns in no group split what the groups leave (1 − Σ group
// shares) in proportion to their R.
func (k *Core) SetEntitlements(e *Entitlements) error {
	if e != nil {
		if err := e.Validate(); err != nil {
			return err
		}
	}
	k.ent = e
	k.entOf = nil
	if e != nil {
		k.entOf = map[string]entRef{}
		for g, grp := range e.Groups {
			for _, m := range grp.Members {
				k.entOf[m.Name] = entRef{group: g, share: m.Share}
			}
		}
	}
	k.reshare()
	k.changed() // the shares changed
	return nil
}

// entRef is where a named campaign sits in the entitlements.
type entRef struct {
	group int
	share float64
}

// SharesEpoch changes whenever the campaigns' shares and groups may have
// (a registration, SetEntitlements): a rule that caches what it derives
// from them keeps it while the epoch stays.
func (k *Core) SharesEpoch() uint64 { return k.sharesEpoch }

// Groups is every group in order: the entitlements' groups as listed,
// then one per campaign in no group, in registration order. The filler is
// in none. Read only.
func (k *Core) Groups() []Group { return k.groups }

// reshare sets every campaign's Share and Group, and the groups (see
// SetEntitlements and Entitlements).
func (k *Core) reshare() {
	k.sharesEpoch++
	k.groups = k.groups[:0]
	if k.ent != nil {
		for _, g := range k.ent.Groups {
			k.groups = append(k.groups, Group{Name: g.Name, Share: g.Share, Widest: g.Widest})
		}
	}
	// The campaigns in no group split what the groups leave by R.
	rest := 1.0
	for i := range k.groups {
		rest -= k.groups[i].Share
	}
	rest = max(rest, 0)
	total, n := 0.0, 0
	for i := range k.camps {
		cp := &k.camps[i]
		if _, named := k.entOf[cp.Env.Name]; !named && !cp.Filler {
			total += cp.Env.Sustained
			n++
		}
	}
	for i := range k.camps {
		cp := &k.camps[i]
		id := policy.CampaignID(i)
		if cp.Filler {
			cp.Share, cp.Group = 0, -1 // even if named: it only scavenges
			continue
		}
		if ref, named := k.entOf[cp.Env.Name]; named {
			cp.Share, cp.Group = ref.share, ref.group
			k.groups[ref.group].Members = append(k.groups[ref.group].Members, id)
			continue
		}
		switch {
		case total > 0:
			cp.Share = rest * cp.Env.Sustained / total
		default:
			cp.Share = rest / float64(n)
		}
		cp.Group = len(k.groups)
		k.groups = append(k.groups, Group{Name: cp.Env.Name, Share: cp.Share, Members: []policy.CampaignID{id}})
	}
}

// LargestRemainder splits pool whole GPUs among parts entitled to the
// given shares (fractions of the pool that sum to 1) by the largest
// remainder method (docs/studies.md §6.15): each part gets ⌊share × pool⌋,
// and the GPUs left go one each to the parts with the largest fractional
// remainders, ties by the larger share, then by the earlier part. The
// parts sum to the pool whenever any share is positive; shares that sum
// to less than 1 leave more GPUs over than parts, and those go round the
// same order again. With every share 0 every part is 0.
func LargestRemainder(shares []float64, pool int) []int {
	parts := make([]int, len(shares))
	left := pool
	any := false
	for i, s := range shares {
		q := s * float64(pool)
		parts[i] = int(math.Floor(q))
		left -= parts[i]
		any = any || s > 0
	}
	if !any || left <= 0 {
		return parts
	}
	order := make([]int, 0, len(shares))
	for i, s := range shares {
		if s > 0 {
			order = append(order, i)
		}
	}
	rem := func(i int) float64 {
		q := shares[i] * float64(pool)
		return q - math.Floor(q)
	}
	slices.SortStableFunc(order, func(a, b int) int {
		if c := cmp.Compare(rem(b), rem(a)); c != 0 {
			return c
		}
		if c := cmp.Compare(shares[b], shares[a]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	for j := 0; left > 0; j = (j + 1) % len(order) {
		parts[order[j]]++
		left--
	}
	return parts
}

// Usage is GPUs a campaign (by name) held before the replay began, in the
// replay's ticks: every tick t with Start ≤ t < End and t ≤ 0 (the ticks
// after 0 belong to the replay). Policies with a usage memory (fairshare's
// decayed usage, budget's window) start from it (docs/studies.md §6.16),
// charged as if those ticks had been replayed.
type Usage struct {
	Campaign   string
	Start, End int
	GPUs       int
}

// SetHistory gives the campaigns the usage they had before the replay
// (see Usage); rules read it with History when a campaign registers, so
// set it before the first registration. nil clears it.
func (k *Core) SetHistory(h []Usage) error {
	k.history = nil
	for i, u := range h {
		if u.GPUs < 0 || u.End < u.Start {
			return fmt.Errorf("history[%d] (%s): %d GPUs over ticks [%d, %d): need GPUs ≥ 0 and start ≤ end", i, u.Campaign, u.GPUs, u.Start, u.End)
		}
		if k.history == nil {
			k.history = map[string][]Usage{}
		}
		k.history[u.Campaign] = append(k.history[u.Campaign], u)
	}
	return nil
}

// History is campaign c's usage before the replay, in the order given.
func (k *Core) History(c policy.CampaignID) []Usage { return k.history[k.camps[c].Env.Name] }
