package sweep

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/bursar-hpc/bursar/configs"
	"github.com/bursar-hpc/bursar/internal/manifest"
)

// PublishedSeeds are the paper's seeds (configs/*.yaml, full variant).
var PublishedSeeds = []int64{7, 11, 13}

// VariantOut is the default output folder of a sweep command given no
// --out: results/<label> for the command's own run (own seeds, the
// embedded configs, not --quick), and otherwise results/<label>-<variant>
// naming what differs: quick, the seeds (nseedsN when given as a count,
// else the list when it has at most listed seeds, else their number and a
// digest) and the configs given, so that a run with other seeds or configs
// never overwrites the committed results/paper/ or results/compare/
// (whose summaries tests compare with the code).
func VariantOut(s *Setup, label string, own []int64, listed int) string {
	var parts []string
	if s.Quick {
		parts = append(parts, "quick")
	}
	if s.Seeds != nil && !slices.Equal(s.Seeds, own) {
		switch {
		case s.SeedsByCount:
			parts = append(parts, "nseeds"+strconv.Itoa(len(s.Seeds)))
		case len(s.Seeds) <= listed:
			list := make([]string, len(s.Seeds))
			for i, seed := range s.Seeds {
				list[i] = strconv.FormatInt(seed, 10)
			}
			parts = append(parts, "seeds"+strings.Join(list, "-"))
		default:
			parts = append(parts, fmt.Sprintf("seeds%d-%s", len(s.Seeds), seedsDigest(s.Seeds)))
		}
	}
	for _, path := range s.Given {
		parts = append(parts, strings.TrimSuffix(filepath.Base(path), filepath.Ext(path)))
	}
	if len(parts) == 0 {
		return filepath.Join("results", label)
	}
	return filepath.Join("results", label+"-"+strings.Join(parts, "-"))
}

// OwnSeeds are cfg's seeds for s (its quick or full list), for VariantOut
// of a config with seeds of its own (the comparison's 30).
func OwnSeeds(s *Setup, cfg *configs.Config) []int64 {
	list := cfg.Seeds.Full
	if s.Quick {
		list = cfg.Seeds.Quick
	}
	own := make([]int64, len(list))
	for i, v := range list {
		own[i] = int64(v.V)
	}
	return own
}

// seedsDigest tells long seed lists apart in a folder name.
func seedsDigest(seeds []int64) string {
	var b []byte
	for _, s := range seeds {
		b = strconv.AppendInt(b, s, 10)
		b = append(b, ',')
	}
	return manifest.Digest(b)[:8]
}

// GridOut is the default folder of `sweep`: results/<experiment>, but
// never the committed results/paper/ (a config may call its experiment
// "paper"): that one goes to results/sweep-paper.
func GridOut(experiment string) string {
	if experiment == "paper" {
		return filepath.Join("results", "sweep-paper")
	}
	return filepath.Join("results", experiment)
}
