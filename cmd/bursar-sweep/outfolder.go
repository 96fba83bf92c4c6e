package main

import (
	"fmt"
	"os"
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

// customInputs are the flags that make a trace study's run custom: another
// log, window, pool or study config. Without --out such a run writes into
// customOut's folder, not the command's own.
var customInputs = []string{"trace", "window", "pool", "config"}

// customOut is the folder of a custom trace-study run,
// results/<command>-custom-<digest>: the digest (8 hex digits of SHA-256)
// covers the custom inputs as given (pool as a number) and the bytes of
// the config file, so that runs with other inputs never overwrite each
// other and the same run (or slurm-script's shards of it) finds the same
// folder again. given maps a flag of customInputs to its value.
func customOut(command string, given map[string]string) string {
	var b []byte
	for _, name := range customInputs {
		v, ok := given[name]
		if !ok {
			continue
		}
		if name == "pool" {
			if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
				v = strconv.Itoa(n)
			}
		}
		b = fmt.Appendf(b, "%s=%q\n", name, v)
		if name == "config" {
			// An unreadable file fails the run itself with a clear error.
			if data, err := os.ReadFile(v); err == nil {
				b = fmt.Appendf(b, "config-sha256=%s\n", manifest.Digest(data))
			}
		}
	}
	return filepath.Join("results", command+"-custom-"+manifest.Digest(b)[:8])
}

// customOutFor is the out folder of a trace study named command given
// its flags as written: customOut's folder when they name a custom input,
// else def.
func customOutFor(command, def string) func(args []string) string {
	return func(args []string) string {
		if given := customArgs(args); given != nil {
			return customOut(command, given)
		}
		return def
	}
}

// customArgs finds the flags of customInputs in a command's arguments as
// written (--window 0:86400 or --window=0:86400); nil when there are none.
func customArgs(args []string) map[string]string {
	var given map[string]string
	for i, a := range args {
		if !strings.HasPrefix(a, "-") {
			continue
		}
		name, v, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !slices.Contains(customInputs, name) {
			continue
		}
		if !hasValue && i+1 < len(args) {
			v = args[i+1]
		}
		if given == nil {
			given = map[string]string{}
		}
		given[name] = v
	}
	return given
}
