package sweep

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/gob"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// A study is a list of independent, deterministic runs whose results are
// not engine.Metrics: the trace studies (tracestudy: trace,
// budget-knobs; arrive: agents-arrive). ExecuteStudy gives them what
// Execute gives a sweep: a bounded worker pool with results by run index,
// --shard (AssignStudyShards, StudyShardFile, CollectStudyShards,
// MergeStudy) and --cache (the run's content address is StudyPlan.RunKey),
// on the same LPT split, shard-set checks and cache entries as a sweep.

// StudyShardFormat and StudyCacheFormat tag a study's shard files and
// cache keys; they differ from a sweep's, so neither is ever read as the
// other.
const (
	StudyShardFormat = "bursar-study-shard/1"
	StudyCacheFormat = "bursar-study-run/1"
)

// StudyRun is one run of a study.
type StudyRun struct {
	// Label names the run in shard files and errors ("fifo", "budget
	// W=7d m=300s", "bursar metered k=2 seed 1").
	Label string
	// Inputs are the run's own effective inputs as canonical text (the
	// policy and its knobs, the seed, k, …): with the plan's shared inputs
	// and the program, everything its result depends on.
	Inputs string
	// Cost is the run's expected cost in arbitrary units; only the
	// ordering and rough ratios matter to the shards' balance.
	Cost float64
}

// StudyPlan is what a study computes: the command, the inputs every run
// shares (the trace's content digest, the window, the pool, …) and the
// runs in output order.
type StudyPlan struct {
	Command string
	Inputs  string
	Runs    []StudyRun
}

// Digest identifies the plan: a SHA-256 over the command, the shared
// inputs and every run's label and inputs, in order. Two invocations with
// the same digest compute the same runs in the same order, so their
// shards can be merged.
func (p *StudyPlan) Digest() string {
	h := sha256.New()
	fmt.Fprintf(h, "bursar-study-plan/1 %q runs=%d\n%s\n", p.Command, len(p.Runs), p.Inputs)
	for i, r := range p.Runs {
		fmt.Fprintf(h, "%d %q %q\n", i, r.Label, r.Inputs)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// RunKey is the content address of run i by this program: the SHA-256 of
// StudyCacheFormat, ProgramVersion, the command, the shared inputs and the
// run's inputs. The run's position is not in it, so a run keeps its entry
// when the plan around it changes (another policy list, a longer k range).
func (p *StudyPlan) RunKey(i int) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%s\n%q\n%s\n--\n%s\n", StudyCacheFormat, ProgramVersion(), p.Command, p.Inputs, p.Runs[i].Inputs)
	return hex.EncodeToString(h.Sum(nil))
}

// StudyCodec turns a run's result into JSON that decodes to the same
// result bit for bit (floats as ExactFloat, NaN included), for shard files
// and cache entries.
type StudyCodec[R any] struct {
	Encode func(*R) ([]byte, error)
	Decode func([]byte) (R, error)
}

// AssignStudyShards splits the plan's runs into n shards of about equal
// expected cost (StudyRun.Cost), by the LPT rule AssignShards uses. The
// split depends only on the plan and n; each shard's runs are ascending.
func AssignStudyShards(p *StudyPlan, n int) [][]int {
	costs := make([]float64, len(p.Runs))
	for i, r := range p.Runs {
		costs[i] = r.Cost
	}
	return assignLPT(costs, n)
}

// ExecuteStudy computes the plan's runs (or opt.Runs) with run on the
// worker pool every study shares (runs.execute), with the study's cache
// entries: a run's entry holds its inputs and its result as codec writes
// it, under StudyPlan.RunKey.
func ExecuteStudy[R any](ctx context.Context, p *StudyPlan, run func(i int) (R, error), codec StudyCodec[R], opt Options) ([]R, error) {
	return studyRuns(p, run, codec).execute(ctx, opt)
}

// studyCacheEntry is a study run's cache entry (framed by frameEntry).
type studyCacheEntry struct {
	Key     string          `json:"key"`
	Program string          `json:"program"`
	Command string          `json:"command"`
	Shared  string          `json:"shared_inputs"`
	Inputs  string          `json:"inputs"`
	Result  json.RawMessage `json:"result"`
}

func studyRuns[R any](p *StudyPlan, run func(i int) (R, error), codec StudyCodec[R]) runs[R] {
	return runs[R]{
		n:   len(p.Runs),
		run: run,
		key: p.RunKey,
		entry: func(i int, key string, r *R) (any, error) {
			res, err := codec.Encode(r)
			if err != nil {
				return nil, fmt.Errorf("%s: run %d (%s): encoding its result: %w", p.Command, i, p.Runs[i].Label, err)
			}
			return &studyCacheEntry{Key: key, Program: ProgramVersion(), Command: p.Command, Shared: p.Inputs, Inputs: p.Runs[i].Inputs, Result: res}, nil
		},
		decode: func(key string, body []byte) (R, error) {
			var e studyCacheEntry
			if err := decodeEntry(body, &e, key, func() string { return e.Key }); err != nil {
				var zero R
				return zero, err
			}
			r, err := codec.Decode(e.Result)
			if err != nil {
				return r, fmt.Errorf("%w: %v", errCorrupt, err)
			}
			return r, nil
		},
	}
}

// StudyShardFile is one shard of a study: self-describing like ShardFile
// (program, command and flags, plan digest), with every run's result as
// its codec writes it.
type StudyShardFile struct {
	Format     string          `json:"format"`
	Program    string          `json:"program"`
	Command    string          `json:"command"`
	Args       []string        `json:"args"`
	PlanDigest string          `json:"plan_digest"`
	PlanRuns   int             `json:"plan_runs"`
	Shard      int             `json:"shard"`
	Shards     int             `json:"shards"`
	Runs       []StudyShardRun `json:"runs"`
}

// StudyShardRun is one run of a study shard: its index in the plan, its
// label (for a reader) and its result.
type StudyShardRun struct {
	Run    int             `json:"run"`
	Label  string          `json:"label"`
	Result json.RawMessage `json:"result"`
}

// NewStudyShardFile writes shard sh of plan p: the runs ids of results.
func NewStudyShardFile[R any](command string, args []string, p *StudyPlan, sh Shard, ids []int, results []R, codec StudyCodec[R]) (*StudyShardFile, error) {
	f := &StudyShardFile{Format: StudyShardFormat, Program: ProgramVersion(), Command: command, Args: args,
		PlanDigest: p.Digest(), PlanRuns: len(p.Runs), Shard: sh.Index, Shards: sh.Of, Runs: []StudyShardRun{}}
	for _, i := range ids {
		b, err := codec.Encode(&results[i])
		if err != nil {
			return nil, fmt.Errorf("%s: run %d (%s): encoding its result: %w", p.Command, i, p.Runs[i].Label, err)
		}
		f.Runs = append(f.Runs, StudyShardRun{Run: i, Label: p.Runs[i].Label, Result: b})
	}
	return f, nil
}

// Encode is the file's bytes: indented JSON, one run per line.
func (f *StudyShardFile) Encode() []byte {
	head := *f
	head.Runs = nil
	return encodeShard(head, f.Runs)
}

// ShardFileFormat returns the format tag of a shard file's bytes (""
// when they are not a JSON object with one), so that merge can tell a
// sweep's shards from a study's.
func ShardFileFormat(data []byte) string {
	var head struct {
		Format string `json:"format"`
	}
	if json.Unmarshal(data, &head) != nil {
		return ""
	}
	return head.Format
}

// DecodeStudyShardFile parses a study shard file; name is for messages.
func DecodeStudyShardFile(name string, data []byte) (*StudyShardFile, error) {
	var f StudyShardFile
	if err := decodeShard(name, data, &f, StudyShardFormat); err != nil {
		return nil, err
	}
	for i, r := range f.Runs {
		if r.Run < 0 || r.Run >= f.PlanRuns {
			return nil, fmt.Errorf("%s: runs[%d]: run %d does not exist (the plan has %d)", name, i, r.Run, f.PlanRuns)
		}
	}
	return &f, nil
}

func (f *StudyShardFile) header() shardHeader {
	return shardHeader{f.Format, f.Command, f.Args, f.Program, f.PlanDigest, f.Shard, f.Shards}
}

// CollectStudyShards checks, as CollectShards does for a sweep, that
// files are the complete shards of one study, and orders them by index.
func CollectStudyShards(names []string, files []*StudyShardFile) (*ShardSet, error) {
	set, ordered, err := collect(names, files)
	if err != nil {
		return nil, err
	}
	set.studies = ordered
	return set, nil
}

// MergeStudy rebuilds a study's results from its shards for p (the
// command's plan, rebuilt from its recorded flags). It checks that p is
// the plan the shards ran and that every shard holds exactly the runs
// AssignStudyShards gives it, so that every run is present once.
func MergeStudy[R any](set *ShardSet, p *StudyPlan, codec StudyCodec[R]) ([]R, error) {
	if set.studies == nil {
		return nil, fmt.Errorf("%s is a shard of a sweep, not of the study %s", set.Files[0], p.Command)
	}
	if d := p.Digest(); d != set.PlanDigest {
		return nil, fmt.Errorf("the shards ran plan %s but `%s %s` now expands to plan %s: the trace, a config file or the program's defaults changed since the shards ran",
			set.PlanDigest, set.Command, strings.Join(set.Args, " "), d)
	}
	out := make([]R, len(p.Runs))
	want := AssignStudyShards(p, len(set.studies))
	for k, f := range set.studies {
		got := make([]int, len(f.Runs))
		for j, r := range f.Runs {
			got[j] = r.Run
		}
		if !slices.Equal(got, want[k]) && !(len(got) == 0 && len(want[k]) == 0) {
			return nil, fmt.Errorf("%s: holds %d runs, not the %d that shard %d/%d is assigned", set.Files[k], len(got), len(want[k]), k, len(set.studies))
		}
		for _, r := range f.Runs {
			v, err := codec.Decode(r.Result)
			if err != nil {
				return nil, fmt.Errorf("%s: run %d (%s): %w", set.Files[k], r.Run, r.Label, err)
			}
			out[r.Run] = v
		}
	}
	return out, nil
}

// GobCodec writes a result to shard files and cache entries exactly: the
// result in encoding/gob (every float64 bit for bit, NaN and infinities
// included; a result that holds no map gives the same bytes for the same
// value), as a JSON string. what names the result in errors ("a trace
// study result").
func GobCodec[R any](what string) StudyCodec[R] {
	return StudyCodec[R]{
		Encode: func(r *R) ([]byte, error) {
			var b bytes.Buffer
			if err := gob.NewEncoder(&b).Encode(r); err != nil {
				return nil, err
			}
			return json.Marshal(b.Bytes())
		},
		Decode: func(b []byte) (R, error) {
			var raw []byte
			var r R
			if err := json.Unmarshal(b, &raw); err != nil {
				return r, err
			}
			if err := gob.NewDecoder(bytes.NewReader(raw)).Decode(&r); err != nil {
				return r, fmt.Errorf("%s: %w", what, err)
			}
			return r, nil
		},
	}
}
