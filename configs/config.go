package configs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/bursar-hpc/bursar/engine"
	"github.com/bursar-hpc/bursar/platform"
	"github.com/bursar-hpc/bursar/policy/policies"
	"github.com/bursar-hpc/bursar/policy/registry"
	"github.com/xrash/smetrics"
	"gopkg.in/yaml.v3"

	"github.com/bursar-hpc/bursar/internal/yamlnode"
)

// Error is a config mistake, located: the file, the line (0 when the
// mistake has none, e.g. an empty file) and the key path (seeds[1],
// series[0].grid.headroom, …).
type Error struct {
	File string
	Line int
	Key  string
	Msg  string
	// Err is the underlying error when there is one (for instance
	// engine.ErrInvalidScenario for an out-of-range value).
	Err error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(e.Line))
	}
	if e.Key != "" {
		b.WriteString(": ")
		b.WriteString(e.Key)
	}
	b.WriteString(": ")
	b.WriteString(e.Msg)
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// Setting is one knob value a config sets, and where it says so.
type Setting struct {
	Knob  *engine.Knob
	Value float64
	Key   string
	Line  int
}

// Value is one element of a list, with its line.
type Value struct {
	V    float64
	Line int
}

// Axis is one swept knob: its values, in order, for a full run and for
// --quick.
type Axis struct {
	Knob        *engine.Knob
	Key         string
	Line        int
	Full, Quick []Value
	// FullKey and QuickKey are the key paths of the two lists (the same
	// for a plain list), so that an error points into the right one.
	FullKey, QuickKey string
}

// Series is a named variant of the experiment: its own fixed knobs and
// extra grid axes.
type Series struct {
	Name        string
	Description string
	Key         string
	Line        int
	Fixed       []Setting
	Grid        []Axis
	// Policy is the series' admission policy (nil: the config's).
	Policy *Policy
}

// Config is a parsed, checked experiment config.
type Config struct {
	// File is the name errors give (the path, or configs/<name>.yaml for
	// an embedded config).
	File        string
	Experiment  string
	Description string
	// Seeds is an axis over the seed knob.
	Seeds  Axis
	Fixed  []Setting
	Grid   []Axis
	Series []Series
	// Scenario is the scenario file the config names (scenario: FILE,
	// relative to the config's folder), nil for the paper's scenario;
	// ScenarioFile is its path.
	Scenario     *engine.Scenario
	ScenarioFile string
	// Policy is the admission policy of every run (nil: the scenario
	// file's, else Bursar); a series' policy overrides it.
	Policy *Policy
	// Bootstrap is the resampling of the pooled percentiles' intervals
	// (DefaultBootstrap when the file has no bootstrap key).
	Bootstrap Bootstrap
	// Platform is the machine's nodes every run schedules on (nil: the
	// pool is a number; docs/platform.md); its GPUs are the pool.
	Platform *platform.Spec
}

// Base is the scenario every run of the config starts from: the scenario
// file's, or the paper's defaults.
func (c *Config) Base() engine.Scenario {
	s := engine.DefaultScenario()
	if c.Scenario != nil {
		s = *c.Scenario
	}
	if c.Platform != nil {
		s.Platform, s.Pool = c.Platform, c.Platform.GPUs()
	}
	return s
}

// MaxRuns bounds a plan, so that a typo in a grid fails fast instead of
// exhausting memory.
const MaxRuns = 100_000

// nameRE is what experiment and series names may be: they become folder
// names and CSV cells, so they stay plain.
var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// Reader reads configs, scenario files and study configs with the policies
// of a registry: a policy name or knob is found in Policies (nil:
// policies.Default). The package's functions (Load, Parse, …) are a
// Reader's with the default registry.
type Reader struct {
	Policies *registry.Registry
}

// Load reads and parses a config file.
func Load(path string) (*Config, error) { return Reader{}.Load(path) }

// Load reads and parses a config file.
func (r Reader) Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	return r.Parse(path, data)
}

// yamlLineRE finds the line yaml.v3 puts in its syntax errors, to lift it
// into Error.Line like every other config error.
var yamlLineRE = regexp.MustCompile(`^(?:yaml: )?line (\d+): `)

// Parse decodes a config strictly and checks every scenario it expands
// to, in both the full and the --quick variant. file is the name errors
// give.
func Parse(file string, data []byte) (*Config, error) { return Reader{}.Parse(file, data) }

// Parse: see the package's Parse.
func (r Reader) Parse(file string, data []byte) (*Config, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &Error{File: file, Msg: "the config is empty (want a mapping with experiment, seeds and grid or series)"}
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
		return nil, &Error{File: file, Msg: "the config is empty (want a mapping with experiment, seeds and grid or series)"}
	}
	p := &parser{file: file, policies: r.Policies}
	if err := p.noAliases(&doc); err != nil {
		return nil, err
	}
	c, err := p.config(doc.Content[0])
	if err != nil {
		return nil, err
	}
	for _, quick := range []bool{false, true} {
		if _, err := c.Plan(quick, nil); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func yamlError(file string, data []byte, err error) *Error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	e := &Error{File: file, Msg: "invalid YAML: " + msg, Err: err}
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		e.Line, _ = strconv.Atoi(m[1])
		e.Msg = "invalid YAML: " + msg[len(m[0]):]
		// yaml.v3 names (about) the line where the enclosing block
		// starts, not the line that breaks it: a key indented one space
		// too few on line 5 is "line 2: did not find expected '-'
		// indicator".
		if at := problemLine(data, msg[len(m[0]):]); at > e.Line {
			e.Line = at
		}
	}
	return e
}

// problemLine is the first line at which the document, cut after it,
// fails to parse with the message want: the line that breaks it. 0 when
// there is none (or the file is too long to look).
func problemLine(data []byte, want string) int {
	lines := bytes.SplitAfter(data, []byte("\n"))
	if len(lines) > 1000 {
		return 0
	}
	for k := 1; k <= len(lines); k++ {
		dec := yaml.NewDecoder(bytes.NewReader(bytes.Join(lines[:k], nil)))
		for {
			var n yaml.Node
			err := dec.Decode(&n)
			if err == nil {
				continue
			}
			if msg := strings.TrimPrefix(err.Error(), "yaml: "); !errors.Is(err, io.EOF) {
				if m := yamlLineRE.FindStringSubmatch(msg); m != nil && msg[len(m[0]):] == want {
					return k
				}
			}
			break
		}
	}
	return 0
}

type parser struct {
	file string
	// base is the scenario the config's knobs and paths edit (the
	// scenario file, or nil for the paper's); paths caches one knob per
	// path so that a path names the same knob wherever it appears.
	base  *engine.Scenario
	paths map[string]*engine.Knob
	// policies resolves policy names (nil: policies.Default).
	policies *registry.Registry
}

// registry is the registry the file's policy names are found in.
func (p *parser) registry() *registry.Registry {
	if p.policies != nil {
		return p.policies
	}
	return policies.Default
}

func (p *parser) errAt(n *yaml.Node, key, format string, a ...any) *Error {
	return p.errLine(n.Line, key, format, a...)
}

func (p *parser) errLine(line int, key, format string, a ...any) *Error {
	return &Error{File: p.file, Line: line, Key: key, Msg: fmt.Sprintf(format, a...)}
}

// noAliases refuses YAML aliases: a config is read by people, and aliases
// both hide what a grid is and let a few bytes expand into a huge tree.
func (p *parser) noAliases(n *yaml.Node) error {
	if n.Kind == yaml.AliasNode {
		return p.errAt(n, "", "YAML aliases (*%s) are not supported in a config; write the values out", n.Value)
	}
	for _, c := range n.Content {
		if err := p.noAliases(c); err != nil {
			return err
		}
	}
	return nil
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// mapping walks a mapping's keys in document order, refusing keys not in
// allowed (unless allowed is nil), non-string keys and duplicates.
func (p *parser) mapping(n *yaml.Node, path string, allowed []string, each func(key string, k, v *yaml.Node) error) error {
	if n.Kind != yaml.MappingNode {
		return p.errAt(n, path, "want a mapping (key: value lines), got %s", describe(n))
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode || k.ShortTag() != "!!str" {
			return p.errAt(k, path, "key %s is not a name", describe(k))
		}
		key := k.Value
		if line, dup := seen[key]; dup {
			return p.errAt(k, join(path, key), "key given twice (first at line %d)", line)
		}
		seen[key] = k.Line
		if allowed != nil && !contains(allowed, key) {
			return p.errAt(k, join(path, key), "unknown key%s (want %s)", suggest(key, allowed), strings.Join(allowed, ", "))
		}
		if err := each(key, k, v); err != nil {
			return err
		}
	}
	return nil
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// suggest offers the closest known name to a misspelt one.
func suggest(got string, known []string) string {
	best, bestD := "", 3
	for _, k := range known {
		if d := editDistance(got, k); d < bestD {
			best, bestD = k, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf("; did you mean %q?", best)
}

// editDistance is the Levenshtein distance between a and b in bytes (names
// are ASCII), from smetrics' Wagner–Fischer with unit costs.
func editDistance(a, b string) int { return smetrics.WagnerFischer(a, b, 1, 1, 1) }

func (p *parser) str(n *yaml.Node, key string) (string, error) {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
		return "", p.errAt(n, key, "want text, got %s", describe(n))
	}
	return n.Value, nil
}

func (p *parser) name(n *yaml.Node, key string) (string, error) {
	s, err := p.str(n, key)
	if err != nil {
		return "", err
	}
	if !nameRE.MatchString(s) {
		return "", p.errAt(n, key, "%q is not a usable name (letters, digits, '.', '_' and '-', at most 64, not starting with a punctuation mark)", s)
	}
	return s, nil
}

var topKeys = []string{"experiment", "description", "scenario", "policy", "platform", "seeds", "fixed", "grid", "series", "bootstrap"}
var seriesKeys = []string{"name", "description", "policy", "fixed", "grid"}

// axisKeys are the keys of a list written {full: [...], quick: [...]}.
var axisKeys = []string{"full", "quick"}

func (p *parser) config(root *yaml.Node) (*Config, error) {
	c := &Config{File: p.file, Bootstrap: DefaultBootstrap}
	// The scenario file comes first, wherever it is written: the knobs
	// and paths of fixed and grid are checked against it.
	if root.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(root.Content); i += 2 {
			if root.Content[i].Value != "scenario" {
				continue
			}
			v := root.Content[i+1]
			file, err := p.str(v, "scenario")
			if err != nil {
				return nil, err
			}
			path := file
			if !filepath.IsAbs(path) {
				path = filepath.Join(filepath.Dir(p.file), file)
			}
			s, err := (Reader{Policies: p.policies}).LoadScenario(path)
			if err != nil {
				return nil, p.errAt(v, "scenario", "%v", err)
			}
			c.Scenario, c.ScenarioFile = &s, path
			p.base = &s
		}
	}
	var haveSeeds, haveSeries bool
	err := p.mapping(root, "", topKeys, func(key string, k, v *yaml.Node) error {
		var err error
		switch key {
		case "scenario":
			// Read above.
		case "experiment":
			c.Experiment, err = p.name(v, key)
		case "description":
			c.Description, err = p.str(v, key)
		case "seeds":
			haveSeeds = true
			seedKnob, _ := engine.KnobByName("seed")
			c.Seeds, err = p.axis(seedKnob, k, v, key)
		case "fixed":
			c.Fixed, err = p.fixed(v, key)
		case "grid":
			c.Grid, err = p.grid(v, key)
		case "series":
			haveSeries = true
			c.Series, err = p.seriesList(v, key)
		case "bootstrap":
			c.Bootstrap, err = p.bootstrap(v, key)
		case "policy":
			c.Policy, err = p.policy(v, key)
		case platform.Key:
			c.Platform, err = p.platform(v, key)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if c.Experiment == "" {
		return nil, p.errAt(root, "experiment", "missing: every config names its experiment (experiment: my-sweep)")
	}
	if !haveSeeds {
		return nil, p.errAt(root, "seeds", "missing: list the seeds to run at every grid point (seeds: [7, 11, 13])")
	}
	if !haveSeries {
		c.Series = []Series{{Name: "default", Key: "series", Line: root.Line}}
	}
	if err := p.conflicts(c.Fixed, c.Grid); err != nil {
		return nil, err
	}
	for _, s := range c.Series {
		if err := p.conflicts(s.Fixed, s.Grid); err != nil {
			return nil, err
		}
		for _, a := range c.Grid {
			for _, f := range s.Fixed {
				if f.Knob == a.Knob {
					return nil, p.errLine(f.Line, f.Key, "%s is swept by the top-level grid (line %d); a series may not set it again", a.Knob.Name, a.Line)
				}
			}
			for _, g := range s.Grid {
				if g.Knob == a.Knob {
					return nil, p.errLine(g.Line, g.Key, "%s is already swept by the top-level grid (line %d)", a.Knob.Name, a.Line)
				}
			}
		}
	}
	return c, nil
}

// conflicts refuses a knob both fixed and swept on one level: which one
// would win is not obvious from the file.
func (p *parser) conflicts(fixed []Setting, grid []Axis) error {
	for _, a := range grid {
		for _, f := range fixed {
			if f.Knob == a.Knob {
				return p.errLine(a.Line, a.Key, "%s is both fixed (line %d) and swept here; keep one", a.Knob.Name, f.Line)
			}
		}
	}
	return nil
}

func (p *parser) knob(k *yaml.Node, key string) (*engine.Knob, error) {
	name := k.Value
	if name == "seed" {
		return nil, p.errAt(k, key, "the seed is set by the top-level seeds list, not as a knob")
	}
	if strings.Contains(name, ".") {
		if kn, ok := p.paths[name]; ok {
			return kn, nil
		}
		base := engine.DefaultScenario()
		if p.base != nil {
			base = *p.base
		}
		kn, err := engine.PathKnob(&base, name)
		if err != nil {
			return nil, p.errAt(k, key, "%v", err)
		}
		if p.paths == nil {
			p.paths = map[string]*engine.Knob{}
		}
		p.paths[name] = kn
		return kn, nil
	}
	kn, ok := engine.KnobByName(name)
	if !ok {
		names := make([]string, 0, len(engine.Knobs))
		for i := range engine.Knobs {
			names = append(names, engine.Knobs[i].Name)
		}
		return nil, p.errAt(k, key, "no scenario knob named %q%s (knobs: %s)", name, suggest(name, names), engine.KnobNames())
	}
	return kn, nil
}

func (p *parser) fixed(n *yaml.Node, path string) ([]Setting, error) {
	var out []Setting
	err := p.mapping(n, path, nil, func(name string, k, v *yaml.Node) error {
		key := join(path, name)
		kn, err := p.knob(k, key)
		if err != nil {
			return err
		}
		x, err := p.value(kn, v, key)
		if err != nil {
			return err
		}
		out = append(out, Setting{Knob: kn, Value: x, Key: key, Line: v.Line})
		return nil
	})
	return out, err
}

func (p *parser) grid(n *yaml.Node, path string) ([]Axis, error) {
	var out []Axis
	err := p.mapping(n, path, nil, func(name string, k, v *yaml.Node) error {
		key := join(path, name)
		kn, err := p.knob(k, key)
		if err != nil {
			return err
		}
		a, err := p.axis(kn, k, v, key)
		if err != nil {
			return err
		}
		out = append(out, a)
		return nil
	})
	return out, err
}

// axis reads a list of knob values: [a, b, …] or {full: [...], quick: [...]}.
func (p *parser) axis(kn *engine.Knob, k, n *yaml.Node, key string) (Axis, error) {
	a := Axis{Knob: kn, Key: key, Line: k.Line, FullKey: key, QuickKey: key}
	var err error
	switch n.Kind {
	case yaml.SequenceNode:
		a.Full, err = p.values(kn, n, key)
		a.Quick = a.Full
		return a, err
	case yaml.MappingNode:
		var haveFull, haveQuick bool
		err = p.mapping(n, key, axisKeys, func(which string, _, v *yaml.Node) error {
			var err error
			if which == "full" {
				haveFull = true
				a.FullKey = join(key, which)
				a.Full, err = p.values(kn, v, a.FullKey)
			} else {
				haveQuick = true
				a.QuickKey = join(key, which)
				a.Quick, err = p.values(kn, v, a.QuickKey)
			}
			return err
		})
		if err != nil {
			return a, err
		}
		if !haveFull {
			return a, p.errAt(n, join(key, "full"), "missing: {full: [...], quick: [...]} needs the full list")
		}
		if !haveQuick {
			a.Quick, a.QuickKey = a.Full, a.FullKey
		}
		return a, nil
	}
	return a, p.errAt(n, key, "want a list of values [a, b, …] or {full: [...], quick: [...]}, got %s", describe(n))
}

func (p *parser) values(kn *engine.Knob, n *yaml.Node, key string) ([]Value, error) {
	if n.Kind != yaml.SequenceNode {
		return nil, p.errAt(n, key, "want a list of values [a, b, …], got %s", describe(n))
	}
	if len(n.Content) == 0 {
		return nil, p.errAt(n, key, "the list is empty")
	}
	out := make([]Value, 0, len(n.Content))
	for i, item := range n.Content {
		ikey := fmt.Sprintf("%s[%d]", key, i)
		x, err := p.value(kn, item, ikey)
		if err != nil {
			return nil, err
		}
		for _, prev := range out {
			if prev.V == x {
				return nil, p.errAt(item, ikey, "%s is listed twice (also line %d)", item.Value, prev.Line)
			}
		}
		out = append(out, Value{V: x, Line: item.Line})
	}
	return out, nil
}

// value reads one knob value, refusing any YAML type but the knob's kind.
func (p *parser) value(kn *engine.Knob, n *yaml.Node, key string) (float64, error) {
	want := map[string]string{"int": "a whole number", "float": "a number", "bool": "true or false"}[kn.Kind]
	if n.Kind != yaml.ScalarNode {
		return 0, p.errAt(n, key, "%s takes %s, got %s", kn.Name, want, describe(n))
	}
	var x float64
	switch tag := n.ShortTag(); {
	case kn.Kind == "bool" && tag == "!!bool":
		var b bool
		if err := n.Decode(&b); err != nil {
			return 0, p.errAt(n, key, "%s takes %s: %v", kn.Name, want, err)
		}
		if b {
			x = 1
		}
	case kn.Kind != "bool" && tag == "!!int":
		var i int64
		if err := n.Decode(&i); err != nil {
			return 0, p.errAt(n, key, "%s is out of range for %s", n.Value, kn.Name)
		}
		x = float64(i)
	case kn.Kind != "bool" && tag == "!!float":
		if err := n.Decode(&x); err != nil {
			return 0, p.errAt(n, key, "%s takes %s: %v", kn.Name, want, err)
		}
	default:
		return 0, p.errAt(n, key, "%s takes %s, got %s", kn.Name, want, describe(n))
	}
	// Set knows the kind's finer rules (whole numbers, finite values).
	scratch := engine.DefaultScenario()
	if err := kn.Set(&scratch, x); err != nil {
		return 0, p.errAt(n, key, "%v", err)
	}
	if kn.Name == "seed" && x < 0 {
		return 0, p.errAt(n, key, "a seed must not be negative, got %s", n.Value)
	}
	return x, nil
}

func (p *parser) seriesList(n *yaml.Node, path string) ([]Series, error) {
	if n.Kind != yaml.SequenceNode {
		return nil, p.errAt(n, path, "want a list of series (- name: …), got %s", describe(n))
	}
	if len(n.Content) == 0 {
		return nil, p.errAt(n, path, "the list is empty; leave series out for a single series")
	}
	var out []Series
	for i, item := range n.Content {
		s := Series{Key: fmt.Sprintf("%s[%d]", path, i), Line: item.Line}
		err := p.mapping(item, s.Key, seriesKeys, func(key string, _, v *yaml.Node) error {
			var err error
			switch key {
			case "name":
				s.Name, err = p.name(v, join(s.Key, key))
			case "description":
				s.Description, err = p.str(v, join(s.Key, key))
			case "fixed":
				s.Fixed, err = p.fixed(v, join(s.Key, key))
			case "grid":
				s.Grid, err = p.grid(v, join(s.Key, key))
			case "policy":
				s.Policy, err = p.policy(v, join(s.Key, key))
			}
			return err
		})
		if err != nil {
			return nil, err
		}
		if s.Name == "" {
			return nil, p.errAt(item, join(s.Key, "name"), "missing: every series has a name")
		}
		for _, prev := range out {
			if prev.Name == s.Name {
				return nil, p.errAt(item, join(s.Key, "name"), "series %q is defined twice (also line %d)", s.Name, prev.Line)
			}
		}
		out = append(out, s)
	}
	return out, nil
}

// platform reads a `platform:` mapping (docs/platform.md), its mistakes
// located like every config mistake.
func (p *parser) platform(n *yaml.Node, key string) (*platform.Spec, error) {
	spec, err := platform.FromNode(p.file, n, key)
	if err != nil {
		return nil, FromPlatform(err)
	}
	return &spec, nil
}

// FromPlatform turns a platform reader's error into a config Error (file,
// line, key); any other error is returned as it is.
func FromPlatform(err error) error {
	var pe *platform.Error
	if errors.As(err, &pe) {
		return &Error{File: pe.File, Line: pe.Line, Key: pe.Field, Msg: pe.Msg}
	}
	return err
}

// ReadPlatform reads a platform file (--platform FILE; docs/platform.md),
// its mistakes located like a config's.
func ReadPlatform(path string) (*platform.Spec, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	spec, err := platform.Read(path, data)
	if err != nil {
		return nil, FromPlatform(err)
	}
	return &spec, nil
}

// describe names what a node holds, for "got …" in type errors.
var describe = yamlnode.Describe
