package main

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/bursar-hpc/bursar/internal/manifest"
	"github.com/urfave/cli/v2"
)

// publishedSeeds are the paper's seeds (configs/*.yaml, full variant).
var publishedSeeds = []int64{7, 11, 13}

// variantOut is the default output folder of an experiment command given
// no --out: results/<label> for the paper's own run (embedded configs,
// seeds 7, 11, 13, not --quick), and otherwise results/<label>-<variant>,
// so that a run with other seeds or configs never overwrites the committed
// results/paper/ (whose summary.json a test compares with the code).
func variantOut(c *cli.Context, st *sweepSetup, label string) string {
	var parts []string
	if st.quick {
		parts = append(parts, "quick")
	}
	if st.seeds != nil && !slices.Equal(st.seeds, publishedSeeds) {
		switch {
		case c.IsSet("nseeds"):
			parts = append(parts, "nseeds"+strconv.Itoa(len(st.seeds)))
		case len(st.seeds) <= 6:
			s := make([]string, len(st.seeds))
			for i, seed := range st.seeds {
				s[i] = strconv.FormatInt(seed, 10)
			}
			parts = append(parts, "seeds"+strings.Join(s, "-"))
		default:
			parts = append(parts, fmt.Sprintf("seeds%d-%s", len(st.seeds), seedsDigest(st.seeds)))
		}
	}
	for _, path := range configFlagPaths(c) {
		parts = append(parts, strings.TrimSuffix(filepath.Base(path), filepath.Ext(path)))
	}
	name := label
	if len(parts) > 0 {
		name += "-" + strings.Join(parts, "-")
	}
	return filepath.Join("results", name)
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

// sweepOut is the default folder of `sweep`: results/<experiment>, but
// never the committed results/paper/ (a config may call its experiment
// "paper"): that one goes to results/sweep-paper.
func sweepOut(experiment string) string {
	if experiment == "paper" {
		return filepath.Join("results", "sweep-paper")
	}
	return filepath.Join("results", experiment)
}
