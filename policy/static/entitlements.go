package static

import (
	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/baseline"
)

// group is one group of campaigns and its entitlement, a fraction of the
// pool (docs/studies.md §1).
type group struct {
	share   float64
	members []policy.CampaignID
}

// entitlements lists the groups in group order, as the Core reads them
// (baseline.Core.Groups: a trace's groups, or each campaign but the filler
// a group of its own, entitled to its R share).
func entitlements(k *baseline.Core) []group {
	gs := k.Groups()
	out := make([]group, len(gs))
	for g := range gs {
		out[g] = group{share: gs[g].Share, members: gs[g].Members}
	}
	return out
}
