package sweep

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/bursar-hpc/bursar/configs"
	"github.com/bursar-hpc/bursar/engine"
)

// RunID names one run of a sweep: the plan (its index among the plans
// executed together) and the run's index in that plan.
type RunID struct {
	Plan int `json:"plan"`
	Run  int `json:"run"`
}

// Shard is one part of a sweep split n ways: Index in [0, Of).
type Shard struct {
	Index, Of int
}

// ParseShard reads --shard "i/n": 0 ≤ i < n. The index counts from 0 so
// that Slurm's $SLURM_ARRAY_TASK_ID (with --array=0-(n-1)) and
// Kubernetes' $JOB_COMPLETION_INDEX pass through unchanged.
func ParseShard(s string) (Shard, error) {
	is, ns, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(strings.TrimSpace(is))
	n, err2 := strconv.Atoi(strings.TrimSpace(ns))
	if !ok || err1 != nil || err2 != nil {
		return Shard{}, fmt.Errorf("--shard %q: want i/n, e.g. 0/3 (i counts from 0)", s)
	}
	if n < 1 || n > MaxShards || i < 0 || i >= n {
		return Shard{}, fmt.Errorf("--shard %q: want 0 ≤ i < n ≤ %d (i counts from 0)", s, MaxShards)
	}
	return Shard{i, n}, nil
}

// MaxShards bounds n in --shard i/n.
const MaxShards = 10000

func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.Index, s.Of) }

// RunCost is a run's expected cost in arbitrary units: the simulated
// ticks times the work done per tick, which grows with the campaigns
// (victim, two science campaigns, backfill, the storms, the probe) and
// with the science tasks. The weights were fitted by eye to per-run times
// measured on the paper's grid (a run with 3000 tasks costs about three
// times one with none; each storm adds about a tenth); only the ordering
// and rough ratios matter to the balance.
func RunCost(s *engine.Scenario) float64 {
	campaigns := 4 + s.Storms
	if s.Probe {
		campaigns++
	}
	return float64(s.Ticks) * (float64(campaigns) + float64(s.Tasks)/500)
}

// AssignShards splits the runs of plans into n shards of about equal
// expected cost (RunCost), by the longest-processing-time-first greedy
// rule: the runs by decreasing cost (ties: plan order, then run order) each
// go to the shard with the least cost so far (ties: the lowest index).
// The split depends only on the plans and n; each shard's runs are
// returned in plan-then-run order.
func AssignShards(plans []*configs.Plan, n int) [][]RunID {
	var ids []RunID
	var costs []float64
	for pi, p := range plans {
		for ri := range p.NumRuns() {
			_, s := p.Run(ri)
			ids = append(ids, RunID{pi, ri})
			costs = append(costs, RunCost(&s))
		}
	}
	out := make([][]RunID, n)
	for k, shard := range assignLPT(costs, n) {
		for _, j := range shard {
			out[k] = append(out[k], ids[j])
		}
	}
	return out
}

// assignLPT splits jobs 0 … len(costs)−1 into n shards by the
// longest-processing-time-first greedy rule: by decreasing cost (ties:
// the lower index) each job goes to the shard with the least cost so far
// (ties: the lowest shard). Each shard's jobs are returned ascending; a
// shard may get none (nil). Sweeps (AssignShards) and studies
// (AssignStudyShards) share it, so both split alike.
func assignLPT(costs []float64, n int) [][]int {
	order := make([]int, len(costs))
	for i := range order {
		order[i] = i
	}
	// A stable sort keeps index order among equal costs.
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(costs[b], costs[a]) })
	load := make([]float64, n)
	out := make([][]int, n)
	for _, j := range order {
		best := 0
		for k := 1; k < n; k++ {
			if load[k] < load[best] {
				best = k
			}
		}
		load[best] += costs[j]
		out[best] = append(out[best], j)
	}
	for _, js := range out {
		slices.Sort(js)
	}
	return out
}

// PlanDigest identifies what a sweep computes: a SHA-256 over every plan's
// experiment, mode and seeds and, for every run, its series, swept knobs
// and full scenario. Two invocations with the same digest run the same
// scenarios in the same order, so their shards can be merged.
func PlanDigest(plans []*configs.Plan) string {
	h := sha256.New()
	fmt.Fprintf(h, "bursar-plan/1 %d\n", len(plans))
	for _, p := range plans {
		fmt.Fprintf(h, "plan %q quick=%t seeds=%v runs=%d\n", p.Experiment, p.Quick, p.Seeds, p.NumRuns())
		for ri := range p.NumRuns() {
			pt, s := p.Run(ri)
			fmt.Fprintf(h, "%d %q", ri, pt.Series)
			for _, sw := range pt.Swept {
				fmt.Fprintf(h, " %s=%s", sw.Knob.Name, sw.Knob.Format(&s))
			}
			h.Write([]byte(" "))
			h.Write(marshalWire(s))
			h.Write([]byte("\n"))
		}
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// ProgramVersion names the code that computes a run, for shard files and
// cache keys: the module version and VCS revision stamped into the binary
// when the build was from a clean checkout; otherwise (a modified tree, a
// test binary, go run) the SHA-256 of the executable itself, so that
// changed code never reuses another build's results. Either is followed
// by the Go version and the architecture: the compiler may fuse a
// multiply-add into one FMA instruction on some architectures (arm64,
// ppc64, s390x) and not on others (amd64), which can change a float's
// last bit.
var ProgramVersion = sync.OnceValue(programVersion)

func programVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		var rev string
		modified := true
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
		if rev != "" && !modified {
			return fmt.Sprintf("%s@%s+%s %s %s", bi.Main.Path, bi.Main.Version, rev, runtime.Version(), runtime.GOARCH)
		}
	}
	if exe, err := os.Executable(); err == nil {
		if f, err := os.Open(exe); err == nil {
			defer f.Close()
			h := sha256.New()
			if _, err := io.Copy(h, f); err == nil {
				return fmt.Sprintf("exe-sha256:%s %s %s", hex.EncodeToString(h.Sum(nil)), runtime.Version(), runtime.GOARCH)
			}
		}
	}
	// Nothing identifies the build: a version no other build shares makes
	// every cache lookup miss rather than risk a stale hit.
	return fmt.Sprintf("unknown-build pid %d", os.Getpid())
}

// ShardFormat is the format tag of a shard file.
const ShardFormat = "bursar-shard/1"

// ShardFile is one shard's output: self-describing (which program, which
// command and flags, which plan, which runs) and holding every run's
// metrics exactly (see ExactFloat).
type ShardFile struct {
	Format  string `json:"format"`
	Program string `json:"program"`
	// Command and Args are the sweep command and the flags that shape
	// its result (not --shard, --out, --workers, --quiet, --cache), so
	// that merge can replay the command's reduce-and-write path.
	Command    string        `json:"command"`
	Args       []string      `json:"args"`
	PlanDigest string        `json:"plan_digest"`
	Plans      []ShardPlan   `json:"plans"`
	Shard      int           `json:"shard"`
	Shards     int           `json:"shards"`
	Runs       []ShardRunOut `json:"runs"`
}

// ShardPlan names one plan of the sweep and its size.
type ShardPlan struct {
	Experiment string `json:"experiment"`
	Runs       int    `json:"runs"`
}

// ShardRunOut is one run of a shard: which run, its seed and series (for
// a reader), and its metrics.
type ShardRunOut struct {
	RunID
	Series  string      `json:"series"`
	Seed    int64       `json:"seed"`
	Metrics wireMetrics `json:"metrics"`
}

// ShardFileName is the name of shard sh's file.
func ShardFileName(sh Shard) string {
	return fmt.Sprintf("shard-%d-of-%d.json", sh.Index, sh.Of)
}

// NewShardFile describes shard sh of a sweep whose results hold (at least)
// the runs ids.
func NewShardFile(command string, args []string, results []*Results, sh Shard, ids []RunID) *ShardFile {
	plans := make([]*configs.Plan, len(results))
	f := &ShardFile{Format: ShardFormat, Program: ProgramVersion(), Command: command, Args: args,
		Shard: sh.Index, Shards: sh.Of, Runs: []ShardRunOut{}}
	for i, r := range results {
		plans[i] = r.Plan
		f.Plans = append(f.Plans, ShardPlan{r.Plan.Experiment, r.Plan.NumRuns()})
	}
	f.PlanDigest = PlanDigest(plans)
	for _, id := range ids {
		pt, s := plans[id.Plan].Run(id.Run)
		f.Runs = append(f.Runs, ShardRunOut{RunID: id, Series: pt.Series, Seed: s.Seed, Metrics: toWire(&results[id.Plan].Metrics[id.Run])})
	}
	return f
}

// Encode is the file's bytes: indented JSON, one run per line.
func (f *ShardFile) Encode() []byte {
	head := *f
	head.Runs = nil
	return encodeShard(head, f.Runs)
}

// encodeShard is a shard file's bytes: head (the file less its runs,
// whose "runs": null ends it) as indented JSON, with the runs one per
// line in place of the null.
func encodeShard[W any](head any, runs []W) []byte {
	b, err := json.MarshalIndent(head, "", "  ")
	if err != nil {
		panic(err)
	}
	b = b[:len(b)-len("null\n}")]
	b = append(b, '[')
	for i := range runs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, "\n    "...)
		b = append(b, marshalWire(&runs[i])...)
	}
	return append(b, "\n  ]\n}\n"...)
}

// DecodeShardFile parses a shard file; name is for messages.
func DecodeShardFile(name string, data []byte) (*ShardFile, error) {
	var f ShardFile
	if err := decodeShard(name, data, &f, ShardFormat); err != nil {
		return nil, err
	}
	for i, r := range f.Runs {
		if r.Plan < 0 || r.Plan >= len(f.Plans) || r.Run < 0 || r.Run >= f.Plans[r.Plan].Runs {
			return nil, fmt.Errorf("%s: runs[%d]: run %d of plan %d does not exist", name, i, r.Run, r.Plan)
		}
	}
	return &f, nil
}

// decodeShard parses a shard file into f strictly (no unknown field) and
// checks its format tag and its index.
func decodeShard[F interface{ header() shardHeader }](name string, data []byte, f F, format string) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(f); err != nil {
		return fmt.Errorf("%s: not a shard file: %w", name, err)
	}
	h := f.header()
	if h.Format != format {
		return fmt.Errorf("%s: format %q, want %q", name, h.Format, format)
	}
	if h.Shards < 1 || h.Shard < 0 || h.Shard >= h.Shards {
		return fmt.Errorf("%s: shard %d of %d is out of range", name, h.Shard, h.Shards)
	}
	return nil
}

// ShardSet is the complete set of a sweep's or a study's shards, checked
// to be of one program, command, flags and plan, ready to merge
// (ShardSet.Results for a sweep, MergeStudy for a study).
type ShardSet struct {
	Command    string
	Args       []string
	Program    string
	PlanDigest string
	Files      []string // by index
	// Folder is where FindShardSet found them (the first folder given).
	Folder string
	// One of the two is set: the shard files by index.
	sweeps  []*ShardFile
	studies []*StudyShardFile
}

// Len is the number of shards.
func (set *ShardSet) Len() int { return len(set.Files) }

func (f *ShardFile) header() shardHeader {
	return shardHeader{f.Format, f.Command, f.Args, f.Program, f.PlanDigest, f.Shard, f.Shards}
}

// CollectShards checks that files (shard files, already decoded) are the
// complete shards of one sweep: one format, program, command, flags and
// plan digest, one shard count, every index exactly once. Every problem
// names the files concerned; missing shards are listed by index and file
// name.
func CollectShards(names []string, files []*ShardFile) (*ShardSet, error) {
	set, ordered, err := collect(names, files)
	if err != nil {
		return nil, err
	}
	set.sweeps = ordered
	return set, nil
}

// collect checks files (collectHeaders) and returns the set's header and
// names with the files ordered by index.
func collect[F interface{ header() shardHeader }](names []string, files []F) (*ShardSet, []F, error) {
	hs := make([]shardHeader, len(files))
	for i, f := range files {
		hs[i] = f.header()
	}
	order, err := collectHeaders(names, hs)
	if err != nil {
		return nil, nil, err
	}
	first := hs[0]
	set := &ShardSet{Command: first.Command, Args: first.Args, Program: first.Program, PlanDigest: first.PlanDigest}
	ordered := make([]F, len(order))
	for i, k := range order {
		ordered[i] = files[k]
		set.Files = append(set.Files, names[k])
	}
	return set, ordered, nil
}

// FindShardSet reads the shard files in the folders or files args name
// (a folder: its shard-I-of-N.json) as ReadShardSet does; the set's
// Folder is the first folder (a file's own).
func FindShardSet(args []string) (*ShardSet, error) {
	var names []string
	for _, a := range args {
		fi, err := os.Stat(a)
		if err != nil {
			return nil, err
		}
		if !fi.IsDir() {
			names = append(names, a)
			continue
		}
		found, err := filepath.Glob(filepath.Join(a, "shard-*-of-*.json"))
		if err != nil {
			return nil, err
		}
		if len(found) == 0 {
			return nil, fmt.Errorf("%s holds no shard files (shard-I-of-N.json)", a)
		}
		names = append(names, found...)
	}
	set, err := ReadShardSet(names)
	if err != nil {
		return nil, err
	}
	set.Folder = args[0]
	if fi, _ := os.Stat(set.Folder); fi != nil && !fi.IsDir() {
		set.Folder = filepath.Dir(set.Folder)
	}
	return set, nil
}

// ReadShardSet reads the shard files names, a sweep's (ShardFormat) or a
// study's (StudyShardFormat), and checks that they are the complete
// shards of one of them.
func ReadShardSet(names []string) (*ShardSet, error) {
	var (
		sweeps  []*ShardFile
		studies []*StudyShardFile
	)
	for i, name := range names {
		data, err := os.ReadFile(name)
		if err != nil {
			return nil, err
		}
		study := ShardFileFormat(data) == StudyShardFormat
		if i > 0 && study != (studies != nil) {
			return nil, fmt.Errorf("%s and %s are shards of different kinds (a sweep's and a trace study's): not one sweep", names[0], name)
		}
		if study {
			f, err := DecodeStudyShardFile(name, data)
			if err != nil {
				return nil, err
			}
			studies = append(studies, f)
			continue
		}
		f, err := DecodeShardFile(name, data)
		if err != nil {
			return nil, err
		}
		sweeps = append(sweeps, f)
	}
	if studies != nil {
		return CollectStudyShards(names, studies)
	}
	return CollectShards(names, sweeps)
}

// shardHeader is what sweep and study shard files share: which command,
// flags, program and plan, and which shard of how many.
type shardHeader struct {
	Format        string
	Command       string
	Args          []string
	Program       string
	PlanDigest    string
	Shard, Shards int
}

// collectHeaders checks that the shard files named names (their headers
// hs, in the same order) are the complete shards of one sweep or study:
// one program, command, flags and plan digest, one shard count, every
// index exactly once. It returns the positions in hs of shards 0 … N−1.
// Every problem names the files concerned; missing shards are listed by
// index and file name.
func collectHeaders(names []string, hs []shardHeader) ([]int, error) {
	if len(hs) == 0 {
		return nil, fmt.Errorf("no shard files (shard-I-of-N.json) found")
	}
	first, fname := hs[0], names[0]
	order := make([]int, first.Shards)
	seen := make([]bool, first.Shards)
	for k, f := range hs {
		name := names[k]
		switch {
		case f.Command != first.Command || !slices.Equal(f.Args, first.Args):
			return nil, fmt.Errorf("%s is of `%s %s` but %s of `%s %s`: not one sweep", name, f.Command, strings.Join(f.Args, " "), fname, first.Command, strings.Join(first.Args, " "))
		case f.PlanDigest != first.PlanDigest:
			return nil, fmt.Errorf("%s and %s are of different plans (digests %s, %s): a config or flag changed between them", name, fname, f.PlanDigest, first.PlanDigest)
		case f.Shards != first.Shards:
			return nil, fmt.Errorf("%s is one of %d shards but %s one of %d", name, f.Shards, fname, first.Shards)
		case f.Program != first.Program:
			return nil, fmt.Errorf("%s was computed by %q but %s by %q: rerun the shards with one build", name, f.Program, fname, first.Program)
		}
		if seen[f.Shard] {
			return nil, fmt.Errorf("shard %d/%d is given twice: %s and %s", f.Shard, f.Shards, names[order[f.Shard]], name)
		}
		seen[f.Shard], order[f.Shard] = true, k
	}
	var missing []string
	for i, ok := range seen {
		if !ok {
			missing = append(missing, fmt.Sprintf("%d (%s)", i, ShardFileName(Shard{i, first.Shards})))
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("incomplete: %d of %d shards missing: %s", len(missing), first.Shards, strings.Join(missing, ", "))
	}
	return order, nil
}

// Results rebuilds the sweep's results from the shards for plans (the
// command's plans, rebuilt from its recorded flags). It checks that plans
// are the ones the shards ran and that every shard holds exactly the runs
// AssignShards gives it, so that every run is present once.
func (set *ShardSet) Results(plans []*configs.Plan) ([]*Results, error) {
	if set.sweeps == nil {
		return nil, fmt.Errorf("%s is a shard of a trace study, not of a sweep", set.Files[0])
	}
	if d := PlanDigest(plans); d != set.PlanDigest {
		return nil, fmt.Errorf("the shards ran plan %s but `%s %s` now expands to plan %s: a config file changed since the shards ran", set.PlanDigest, set.Command, strings.Join(set.Args, " "), d)
	}
	out := make([]*Results, len(plans))
	for i, p := range plans {
		out[i] = &Results{Plan: p, Metrics: make([]engine.Metrics, p.NumRuns())}
	}
	want := AssignShards(plans, len(set.sweeps))
	for i, f := range set.sweeps {
		got := make([]RunID, len(f.Runs))
		for k := range f.Runs {
			got[k] = f.Runs[k].RunID
		}
		if !slices.Equal(got, want[i]) {
			return nil, fmt.Errorf("%s: holds %d runs, not the %d that shard %d/%d is assigned", set.Files[i], len(got), len(want[i]), i, len(set.sweeps))
		}
		for k := range f.Runs {
			r := &f.Runs[k]
			out[r.Plan].Metrics[r.Run] = r.Metrics.metrics()
		}
	}
	return out, nil
}
