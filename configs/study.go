package configs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/bursar-hpc/bursar/platform"
)

// BuiltinTraces are the names a config's trace may give for the logs
// embedded in the binary (tracestudy.Builtin): the full SDSC-SP2 log and
// its 28-day excerpt. They are not read as paths.
var BuiltinTraces = []string{"sdsc-sp2", "sdsc-sp2-excerpt"}

// The trace studies' configs (trace.yaml, budget-knobs.yaml,
// agents-arrive.yaml; `--config FILE` on those commands): what a study
// replays and which runs it makes. Every key but experiment is optional;
// a key left out keeps the command's default, and a command-line flag
// overrides the file.
//
//	experiment: agents-arrive   # required: trace, budget-knobs or agents-arrive, the command's own
//	description: free text
//	trace: logs/SDSC-SP2.swf.gz # an SWF log, plain or gzip, relative to the config's folder
//	window: {from: 21772800, until: 21945600}  # seconds after the log's start; until may be left out
//	pool: 128                   # GPUs (default: the log's MaxProcs)
//	policies: [fifo, bursar]    # trace, agents-arrive
//	slurm_conf: site/slurm.conf # trace: a site's slurm.conf, sshare dump, Kueue manifests
//	sshare: site/sshare.txt     #   (docs/site-config.md), relative to the config's folder
//	kueue: site/kueue.yaml
//	windows_days: [1, 3, 7, 14] # budget-knobs: W
//	min_runtimes_s: [0, 300]    # budget-knobs: m
//	max_k: 8                    # agents-arrive
//	stay: 2d                    # agents-arrive: how long the agents act (a duration)
//	seeds: [1, 2, 3]            # agents-arrive: the seeds (or nseeds: 3, seeds 1 … 3)
//	agent_scale: 1              # agents-arrive: the agents' size × pool/512
//	agent_share: 0.1            # agents-arrive: the agents' group's entitlement
//	agent_phi: 1                # agents-arrive: Σ max(R, g) ÷ (agent_share × pool)
//	by: user                    # every study: a campaign is a user (or group)
//	classes: {standby: opportunistic}  # every study: queue → class
//	shares: groups              # every study: groups, window, users, equal-groups, equal-users
//	bucket: largest-job         # every study: Bursar's bucket (or hours:N)
//	restart: checkpoint:3600    # every study: budget's restart (or zero)
//	warmup: 1d                  # every study: replayed, not measured
//	cooldown: 1d                # every study
//	windows: 4x14d              # every study: N windows of D days
//
// Decoding is as strict as a sweep config's: an unknown key (or one the
// experiment does not take), a duplicate, a value of the wrong type or out
// of range, a YAML alias or a second document is an *Error naming the
// file, the line and the key.

// Study experiments and the keys each takes beside the common ones.
var studyKeys = map[string][]string{
	"trace":         append([]string{"policies", "slurm_conf", "sshare", "kueue", "platform"}, traceMappingKeys...),
	"budget-knobs":  append([]string{"windows_days", "min_runtimes_s"}, traceMappingKeys...),
	"agents-arrive": append([]string{"policies", "max_k", "stay", "seeds", "nseeds", "agent_scale", "agent_share", "agent_phi"}, traceMappingKeys...),
}

// studyWindowKeys are the keys of a study config's window.
var studyWindowKeys = []string{"from", "until"}

var studyCommonKeys = []string{"experiment", "description", "trace", "window", "pool"}

// StudyExperiments are the trace studies a StudyConfig may name.
var StudyExperiments = []string{"trace", "budget-knobs", "agents-arrive"}

// Window is a window of a trace: the jobs submitted in [From, Until)
// seconds after the log's start; Until 0 means no end.
type Window struct {
	From, Until int64
}

// StudyConfig is a parsed trace-study config; a nil field or list was not
// set.
type StudyConfig struct {
	File        string
	Experiment  string
	Description string
	// Trace is the log's path as resolved (relative to the config's
	// folder when the file gives a relative one); "" when not set.
	// TraceName is the path as the file writes it, the name outputs give
	// (the same however the config's own path was written).
	// A built-in name (BuiltinTraces) is kept as it is.
	Trace, TraceName string
	Window           *Window
	Pool             *int
	Policies         []string
	// Platform is the machine's nodes (trace; nil: the pool is a number;
	// docs/platform.md).
	Platform *platform.Spec
	// budget-knobs
	WindowsDays, MinRuntimes []int
	// Mapping is the trace mapping and measurement knobs (trace,
	// budget-knobs).
	Mapping TraceMapping
	// agents-arrive: Stay in seconds; AgentScale, AgentShare and
	// AgentPhi (φ) as docs/studies.md §6.14 says.
	MaxK                             *int
	Stay                             *int64
	AgentScale, AgentShare, AgentPhi *float64
	// trace: the site's own configuration (docs/site-config.md), each a
	// path as resolved (relative to the config's folder), "" not set.
	SlurmConf, Sshare, Kueue string
	// Seeds is `seeds: [1, 2, 3]`, the task seeds; NSeeds is `nseeds: N`,
	// the seeds 1 … N. A file sets at most one of them.
	Seeds  []int64
	NSeeds *int
}

// LoadStudy reads and parses a trace-study config file.
func LoadStudy(path string) (*StudyConfig, error) { return Reader{}.LoadStudy(path) }

// LoadStudy: see the package's LoadStudy.
func (r Reader) LoadStudy(path string) (*StudyConfig, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	return r.ParseStudy(path, data)
}

// Bounds of a study config's numbers: the limits a typo should hit long
// before it exhausts the machine.
const (
	maxStudyK     = 64
	maxStudySeeds = 1000
	maxStudyList  = 100
)

// ParseStudy decodes a trace-study config strictly; file is the name
// errors give and the folder a relative trace path is under.
func ParseStudy(file string, data []byte) (*StudyConfig, error) {
	return Reader{}.ParseStudy(file, data)
}

// ParseStudy: see the package's ParseStudy.
func (r Reader) ParseStudy(file string, data []byte) (*StudyConfig, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &Error{File: file, Msg: "the config is empty (want a mapping with experiment and the study's keys)"}
		}
		return nil, yamlError(file, data, err)
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case err == nil:
		return nil, &Error{File: file, Line: next.Line, Msg: "a second YAML document starts here; a config is one document"}
	case !errors.Is(err, io.EOF):
		return nil, yamlError(file, data, err)
	}
	if len(doc.Content) == 0 {
		return nil, &Error{File: file, Msg: "the config is empty (want a mapping with experiment and the study's keys)"}
	}
	p := &parser{file: file, policies: r.Policies}
	if err := p.noAliases(&doc); err != nil {
		return nil, err
	}
	root := doc.Content[0]
	c := &StudyConfig{File: file}
	// The experiment first, wherever it is written: it says which keys
	// the file may have.
	if root.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(root.Content); i += 2 {
			if root.Content[i].Value != "experiment" {
				continue
			}
			v := root.Content[i+1]
			name, err := p.str(v, "experiment")
			if err != nil {
				return nil, err
			}
			if _, ok := studyKeys[name]; !ok {
				return nil, p.errAt(v, "experiment", "%q is not a trace study%s (want %s)", name, suggest(name, StudyExperiments), strings.Join(StudyExperiments, ", "))
			}
			c.Experiment = name
		}
	}
	allowed := append(append([]string{}, studyCommonKeys...), studyKeys[c.Experiment]...)
	err := p.mapping(root, "", allowed, func(key string, _, v *yaml.Node) error {
		var err error
		switch key {
		case "experiment":
			// Read above.
		case "description":
			c.Description, err = p.str(v, key)
		case "trace":
			var path string
			if path, err = p.str(v, key); err == nil {
				if path == "" {
					return p.errAt(v, key, "the path is empty (leave trace out for the embedded excerpt)")
				}
				c.TraceName = path
				if !filepath.IsAbs(path) && !slices.Contains(BuiltinTraces, path) {
					path = filepath.Join(filepath.Dir(file), path)
				}
				c.Trace = path
			}
		case "slurm_conf", "sshare", "kueue":
			var path string
			if path, err = p.str(v, key); err == nil {
				if path == "" {
					return p.errAt(v, key, "the path is empty (leave %s out for none)", key)
				}
				if !filepath.IsAbs(path) {
					path = filepath.Join(filepath.Dir(file), path)
				}
				*map[string]*string{"slurm_conf": &c.SlurmConf, "sshare": &c.Sshare, "kueue": &c.Kueue}[key] = path
			}
		case "window":
			c.Window, err = p.window(v, key)
		case "pool":
			c.Pool, err = p.intIn(v, key, 1, math.MaxInt32)
		case platform.Key:
			c.Platform, err = p.platform(v, key)
		case "policies":
			c.Policies, err = p.names(v, key, p.registry().Known())
		case "windows_days":
			c.WindowsDays, err = p.ints(v, key, 1, 3650)
		case "min_runtimes_s":
			c.MinRuntimes, err = p.ints(v, key, 0, 365*86400)
		case "max_k":
			c.MaxK, err = p.intIn(v, key, 0, maxStudyK)
		case "stay":
			c.Stay, err = p.duration(v, key, 2)
		case "agent_scale":
			c.AgentScale, err = p.floatIn(v, key, 0, MaxAgentScale, false)
		case "agent_phi":
			c.AgentPhi, err = p.floatIn(v, key, 0, MaxAgentPhi, false)
		case "agent_share":
			// The users keep the rest: below 1.
			if c.AgentShare, err = p.floatIn(v, key, 0, 1, false); err == nil && *c.AgentShare == 1 {
				err = p.errAt(v, key, "want a number above 0 and below 1 (the users keep the rest), got %s", v.Value)
			}
		case "seeds":
			if v.Kind == yaml.ScalarNode && v.ShortTag() == "!!int" {
				return p.errAt(v, key, "seeds is a list of seeds, as on the command line: write seeds: [1, 2, 3], or nseeds: %s for the seeds 1 … %s", v.Value, v.Value)
			}
			var list []int
			if list, err = p.ints(v, key, 0, 1<<53); err == nil {
				for _, s := range list {
					c.Seeds = append(c.Seeds, int64(s))
				}
			}
		case "nseeds":
			c.NSeeds, err = p.intIn(v, key, 1, maxStudySeeds)
		default:
			err = p.traceMappingKey(&c.Mapping, key, v)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if c.Seeds != nil && c.NSeeds != nil {
		return nil, p.errAt(root, "nseeds", "give seeds (a list) or nseeds (a count), not both")
	}
	if c.Experiment == "" {
		return nil, p.errAt(root, "experiment", "missing: every config names its study (experiment: %s)", strings.Join(StudyExperiments, " | "))
	}
	return c, nil
}

// intIn reads a whole number in [lo, hi].
func (p *parser) intIn(n *yaml.Node, key string, lo, hi int64) (*int, error) {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
		return nil, p.errAt(n, key, "want a whole number, got %s", describe(n))
	}
	var x int64
	if n.Decode(&x) != nil || x < lo || x > hi {
		return nil, p.errAt(n, key, "want a whole number from %d to %d, got %s", lo, hi, n.Value)
	}
	v := int(x)
	return &v, nil
}

// MaxAgentScale bounds agent_scale (arrive.MaxAgentScale).
const MaxAgentScale = 64

// MaxAgentPhi bounds agent_phi (arrive.MaxAgentPhi).
const MaxAgentPhi = 64

// floatIn reads a number in (lo, hi] (or [lo, hi] with closedLo).
func (p *parser) floatIn(n *yaml.Node, key string, lo, hi float64, closedLo bool) (*float64, error) {
	var x float64
	if n.Kind != yaml.ScalarNode || (n.ShortTag() != "!!int" && n.ShortTag() != "!!float") || n.Decode(&x) != nil {
		return nil, p.errAt(n, key, "want a number, got %s", describe(n))
	}
	if math.IsNaN(x) || x > hi || x < lo || (x == lo && !closedLo) {
		return nil, p.errAt(n, key, "want a number above %v and at most %v, got %s", lo, hi, n.Value)
	}
	return &x, nil
}

// duration reads a duration (ParseDuration) of at least lo seconds.
func (p *parser) duration(n *yaml.Node, key string, lo int64) (*int64, error) {
	if n.Kind != yaml.ScalarNode {
		return nil, p.errAt(n, key, "want a duration such as 2d, got %s", describe(n))
	}
	d, err := ParseDuration(n.Value)
	if err != nil {
		return nil, p.errAt(n, key, "%v", err)
	}
	if d < lo {
		return nil, p.errAt(n, key, "want at least %d s, got %s", lo, n.Value)
	}
	return &d, nil
}

// ints reads a non-empty list of distinct whole numbers in [lo, hi].
func (p *parser) ints(n *yaml.Node, key string, lo, hi int64) ([]int, error) {
	if n.Kind != yaml.SequenceNode {
		return nil, p.errAt(n, key, "want a list [a, b, …], got %s", describe(n))
	}
	if len(n.Content) == 0 || len(n.Content) > maxStudyList {
		return nil, p.errAt(n, key, "want 1 to %d values, got %d", maxStudyList, len(n.Content))
	}
	out := make([]int, 0, len(n.Content))
	lines := map[int]int{}
	for i, item := range n.Content {
		ikey := fmt.Sprintf("%s[%d]", key, i)
		x, err := p.intIn(item, ikey, lo, hi)
		if err != nil {
			return nil, err
		}
		if line, dup := lines[*x]; dup {
			return nil, p.errAt(item, ikey, "%d is listed twice (also line %d)", *x, line)
		}
		lines[*x] = item.Line
		out = append(out, *x)
	}
	return out, nil
}

// names reads a non-empty list of distinct names, each one of known.
func (p *parser) names(n *yaml.Node, key string, known []string) ([]string, error) {
	if n.Kind != yaml.SequenceNode {
		return nil, p.errAt(n, key, "want a list [a, b, …] of %s, got %s", strings.Join(known, ", "), describe(n))
	}
	if len(n.Content) == 0 {
		return nil, p.errAt(n, key, "the list is empty (leave %s out for all of them)", key)
	}
	var out []string
	for i, item := range n.Content {
		ikey := fmt.Sprintf("%s[%d]", key, i)
		s, err := p.str(item, ikey)
		if err != nil {
			return nil, err
		}
		if !contains(known, s) {
			return nil, p.errAt(item, ikey, "unknown %q%s (want some of %s)", s, suggest(s, known), strings.Join(known, ", "))
		}
		if contains(out, s) {
			return nil, p.errAt(item, ikey, "%q is listed twice", s)
		}
		out = append(out, s)
	}
	return out, nil
}

// window reads {from: S, until: E}: E (optional) after S.
func (p *parser) window(n *yaml.Node, key string) (*Window, error) {
	w := &Window{}
	var haveFrom bool
	err := p.mapping(n, key, studyWindowKeys, func(name string, _, v *yaml.Node) error {
		x, err := p.intIn(v, join(key, name), 0, math.MaxInt64)
		if err != nil {
			return err
		}
		if name == "from" {
			haveFrom, w.From = true, int64(*x)
		} else {
			w.Until = int64(*x)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !haveFrom {
		return nil, p.errAt(n, join(key, "from"), "missing: a window starts somewhere (from: 0 for the log's start)")
	}
	if w.Until != 0 && w.Until <= w.From {
		return nil, p.errAt(n, join(key, "until"), "must be after from (%d), got %d", w.From, w.Until)
	}
	return w, nil
}
