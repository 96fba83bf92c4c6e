package slurmconf

import (
	"cmp"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/bursar-hpc/bursar/policy/slurm"
)

// Conf is what a slurm.conf says about scheduling, as policy slurm and
// the pool read it.
type Conf struct {
	// File is the name the file was read under.
	File string
	// Knobs are policy slurm's knobs: Slurm 22.05's defaults
	// (slurm.DefaultKnobs) with every scheduling key the file sets.
	Knobs slurm.Knobs
	// Pool is the default partition's GPUs (Gres=gpu:N on its nodes), or
	// its CPUs where none of its nodes has a GPU (Unit says which).
	Pool int
	Unit string
	// Partition is the default partition's name and Nodes its node count.
	Partition string
	Nodes     int
	// MaxTime is the default partition's MaxTime in seconds (0: none);
	// read, not enforced (the log's own estimates are its time limits).
	MaxTime int64
	// Applied are the keys that set a knob or the pool, in file order.
	Applied []Applied
	// Ignored are the keys that do not bear on scheduling as the model
	// replays it, each once (where first written), in file order.
	Ignored []Ignored
}

// Applied is a key the mapping read: where, and what it set.
type Applied struct {
	Pos        Pos
	Key, Value string
	// Sets is what it set: knob names of policy slurm ("bf_window"), or
	// "pool".
	Sets string
}

// Ignored is a key the mapping did not read, and why.
type Ignored struct {
	Pos      Pos
	Key, Why string
}

func (i Ignored) String() string { return fmt.Sprintf("%s: %s (%s)", i.Pos, i.Key, i.Why) }

// Opener opens the file an Include names.
type Opener func(path string) (io.ReadCloser, error)

func osOpen(path string) (io.ReadCloser, error) { return os.Open(path) }

// ParseFile reads the slurm.conf at path (its Includes under its folder).
func ParseFile(path string) (*Conf, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Parse(path, f)
}

// Parse reads a slurm.conf from r; name is the name errors give and the
// folder relative Includes are read from.
func Parse(name string, r io.Reader) (*Conf, error) { return ParseWith(name, r, osOpen) }

// ParseWith is Parse with Includes opened by open.
func ParseWith(name string, r io.Reader, open Opener) (*Conf, error) {
	var lines []line
	if err := readLines(name, r, open, 0, &lines); err != nil {
		return nil, err
	}
	m := &mapper{c: &Conf{File: name, Knobs: slurm.DefaultKnobs()}, ignoredKeys: map[string]bool{}, top: map[string]pair{}}
	if err := m.sort(lines); err != nil {
		return nil, err
	}
	if err := m.scheduling(); err != nil {
		return nil, err
	}
	if err := m.pool(); err != nil {
		return nil, err
	}
	slices.SortStableFunc(m.c.Ignored, func(a, b Ignored) int { return cmp.Compare(m.seq[a.Pos], m.seq[b.Pos]) })
	if err := m.c.Knobs.Validate(); err != nil {
		return nil, errAt(Pos{name, 0}, "%v", err)
	}
	return m.c, nil
}

// Policy is what the file configures: policy slurm's knobs and the pool
// in GPUs (or CPUs, Unit).
func (c *Conf) Policy() (slurm.Knobs, int) { return c.Knobs, c.Pool }

// mapper turns the lines into a Conf.
type mapper struct {
	c *Conf
	// top are the lines' single keys by lower-case name (the last given
	// wins, as Slurm's "specified more than once, latest value used"),
	// order the names in the order first written.
	top   map[string]pair
	order []string
	// records are the NodeName, NodeSet and PartitionName lines.
	nodes, nodesets, parts []line
	ignoredKeys            map[string]bool
	// seq is each line's place in the file with its Includes read in
	// place, the order Ignored is listed in.
	seq map[Pos]int
}

// ignore lists key as ignored once, with why.
func (m *mapper) ignore(p Pos, key, why string) {
	k := strings.ToLower(key)
	if m.ignoredKeys[k] {
		return
	}
	m.ignoredKeys[k] = true
	m.c.Ignored = append(m.c.Ignored, Ignored{Pos: p, Key: key, Why: why})
}

func (m *mapper) apply(p pair, sets string) {
	m.c.Applied = append(m.c.Applied, Applied{Pos: p.Pos, Key: p.Key, Value: p.Value, Sets: sets})
}

// recordLines are the lines whose first key makes them a record of
// several pairs, and the ignored ones' reasons.
var recordLines = map[string]string{
	"nodename":      "",
	"nodeset":       "",
	"partitionname": "",
	"downnodes":     "node states at start are not replayed: every node of the partition is up",
	"frontendname":  "front-end nodes run no jobs",
	"slurmctldhost": "the controller's host does not bear on scheduling",
}

// sort files each line as a record or its keys as single keys.
func (m *mapper) sort(lines []line) error {
	m.seq = make(map[Pos]int, len(lines))
	for i, l := range lines {
		m.seq[l.Pos] = i
		first := strings.ToLower(l.Pairs[0].Key)
		if why, ok := recordLines[first]; ok {
			switch first {
			case "nodename":
				m.nodes = append(m.nodes, l)
			case "nodeset":
				m.nodesets = append(m.nodesets, l)
			case "partitionname":
				m.parts = append(m.parts, l)
			default:
				m.ignore(l.Pos, l.Pairs[0].Key, why)
			}
			continue
		}
		for _, p := range l.Pairs {
			k := strings.ToLower(p.Key)
			if _, rec := recordLines[k]; rec {
				return errAt(p.Pos, "key %s must start its line", p.Key)
			}
			if _, ok := m.top[k]; !ok {
				m.order = append(m.order, k)
			}
			m.top[k] = p
		}
	}
	return nil
}

// value is the single key k's value (lower-case name) and whether given.
func (m *mapper) value(k string) (string, bool) {
	p, ok := m.top[k]
	return p.Value, ok
}

// scheduling maps the single keys, in the order first written.
func (m *mapper) scheduling() error {
	basic := false
	if v, ok := m.value("prioritytype"); ok && strings.EqualFold(v, "priority/basic") {
		basic = true
	}
	preemptNone := true
	if v, ok := m.value("preempttype"); ok && !strings.EqualFold(v, "preempt/none") {
		preemptNone = false
	}
	for _, k := range m.order {
		p := m.top[k]
		if err := m.key(k, p, basic, preemptNone); err != nil {
			return err
		}
	}
	k := &m.c.Knobs
	if v, ok := m.value("priorityfavorsmall"); ok && k.WJobSize > 0 && !basic {
		if small, _ := yesNo(v); small {
			p := m.top["priorityfavorsmall"]
			return errAt(p.Pos, "key %s=%s: a job-size factor favouring small jobs is not modelled (policy slurm favours large ones, Slurm's default); set PriorityWeightJobSize=0 or PriorityFavorSmall=NO", p.Key, p.Value)
		}
	}
	return nil
}

// weights are the PriorityWeight* keys policy slurm reads.
var weights = map[string]struct {
	knob  string
	field func(*slurm.Knobs) *float64
}{
	"priorityweightage":       {"w_age", func(k *slurm.Knobs) *float64 { return &k.WAge }},
	"priorityweightfairshare": {"w_fairshare", func(k *slurm.Knobs) *float64 { return &k.WFairshare }},
	"priorityweightjobsize":   {"w_job_size", func(k *slurm.Knobs) *float64 { return &k.WJobSize }},
	"priorityweightpartition": {"w_partition", func(k *slurm.Knobs) *float64 { return &k.WPartition }},
	"priorityweightqos":       {"w_qos", func(k *slurm.Knobs) *float64 { return &k.WQOS }},
}

// schedulingPrefixes: a single key starting with one of these that the
// mapping does not know is refused, not ignored, so that a misspelt
// scheduling key cannot pass unnoticed.
var schedulingPrefixes = []string{"priority", "sched", "preempt", "bf_"}

// key maps one single key.
func (m *mapper) key(k string, p pair, basic, preemptNone bool) error {
	kn := &m.c.Knobs
	bad := func(format string, a ...any) error {
		return errAt(p.Pos, "key %s=%s: %s", p.Key, p.Value, fmt.Sprintf(format, a...))
	}
	v := p.Value
	if w, ok := weights[k]; ok {
		if basic {
			m.ignore(p.Pos, p.Key, "PriorityType=priority/basic does not read the weights: the queue is in submit order")
			return nil
		}
		x, err := wholeInt(v)
		if err != nil {
			return bad("want a whole number ≥ 0")
		}
		*w.field(kn) = float64(x)
		m.apply(p, w.knob)
		return nil
	}
	switch k {
	case "schedulertype":
		switch strings.ToLower(v) {
		case "sched/backfill":
			m.apply(p, "policy slurm (main scheduler and backfill)")
		case "sched/builtin":
			return bad("strict priority order without backfill is not modelled: policy slurm is sched/backfill")
		default:
			return bad("unknown scheduler (want sched/backfill)")
		}
	case "prioritytype":
		switch strings.ToLower(v) {
		case "priority/multifactor":
			m.apply(p, "w_* (the weights below)")
		case "priority/basic":
			m.apply(p, "every w_* 0: submit order")
		default:
			return bad("unknown priority plugin (want priority/multifactor or priority/basic)")
		}
	case "priorityweightassoc":
		if x, err := wholeInt(v); err != nil || x != 0 {
			return bad("the association factor is not modelled (want 0, Slurm's default)")
		}
		m.ignore(p.Pos, p.Key, "0, Slurm's default")
	case "priorityweighttres":
		for _, e := range strings.Split(v, ",") {
			_, w, _ := strings.Cut(e, "=")
			if e != "" && strings.Trim(w, "0.") != "" {
				return bad("TRES weights are not modelled (want every weight 0 or none)")
			}
		}
		m.ignore(p.Pos, p.Key, "every weight 0")
	case "prioritymaxage", "prioritydecayhalflife":
		t, inf, err := parseTime(v)
		if err != nil || inf || t == 0 {
			if err == nil {
				return bad("want a time > 0 (no decay, or an infinite age, is not modelled)")
			}
			return bad("%v", err)
		}
		if k == "prioritymaxage" {
			kn.MaxAge = float64(t)
			m.apply(p, "max_age")
		} else {
			kn.HalfLife = float64(t)
			m.apply(p, "half_life")
		}
	case "prioritycalcperiod":
		t, inf, err := parseTime(v)
		if err != nil || inf || t < 60 || t%60 != 0 || t > 1<<30 {
			return bad("want whole minutes ≥ 1")
		}
		kn.CalcPeriod = int(t)
		m.apply(p, "calc_period")
	case "priorityflags":
		return m.priorityFlags(p, bad)
	case "priorityfavorsmall":
		small, err := yesNo(v)
		if err != nil {
			return bad("%v", err)
		}
		why := "NO, Slurm's default"
		if small {
			why = "no effect while PriorityWeightJobSize is 0"
		}
		m.ignore(p.Pos, p.Key, why)
	case "priorityusageresetperiod":
		if !strings.EqualFold(v, "none") {
			return bad("resetting usage is not modelled (want NONE, Slurm's default)")
		}
		m.ignore(p.Pos, p.Key, "NONE, Slurm's default")
	case "prioritysitefactorplugin":
		if !strings.EqualFold(v, "site_factor/none") && v != "" {
			return bad("a site factor plugin is not modelled (want site_factor/none)")
		}
		m.ignore(p.Pos, p.Key, "site_factor/none, Slurm's default")
	case "priorityparameters", "prioritysitefactorparameters":
		m.ignore(p.Pos, p.Key, "read by no plugin the model runs")
	case "preempttype":
		if !strings.EqualFold(v, "preempt/none") {
			return bad("preemption between jobs is not modelled (want preempt/none, Slurm's default)")
		}
		m.ignore(p.Pos, p.Key, "preempt/none, Slurm's default")
	case "preemptmode", "preemptexempttime", "preemptparameters":
		if !preemptNone {
			return bad("preemption is not modelled")
		}
		m.ignore(p.Pos, p.Key, "no effect with PreemptType=preempt/none")
	case "selecttype":
		switch strings.ToLower(v) {
		case "select/cons_tres", "select/cons_res":
			m.ignore(p.Pos, p.Key, "consumable resources: the model counts the pool's GPUs (or CPUs)")
		default:
			return bad("whole-node allocation is not modelled (want select/cons_tres or select/cons_res)")
		}
	case "fairsharedampeningfactor":
		if x, err := wholeInt(v); err != nil || x != 1 {
			return bad("a dampening factor is not modelled (want 1, Slurm's default)")
		}
		m.ignore(p.Pos, p.Key, "1, Slurm's default")
	case "schedulerparameters":
		return m.schedulerParameters(p, bad)
	case "schedulertimeslice":
		m.ignore(p.Pos, p.Key, "gang scheduling only, which the model does not run")
	default:
		for _, pre := range schedulingPrefixes {
			if strings.HasPrefix(k, pre) {
				return errAt(p.Pos, "key %s: an unknown scheduling key (docs/site-config.md lists those read)", p.Key)
			}
		}
		m.ignore(p.Pos, p.Key, notScheduling(k))
	}
	return nil
}

// notScheduling says why a key outside the mapping is ignored.
func notScheduling(k string) string {
	switch {
	case strings.HasPrefix(k, "accountingstorage"):
		return "accounting: the replay keeps its own usage books"
	case strings.Contains(k, "enforce") || strings.HasPrefix(k, "max") || strings.HasPrefix(k, "def"):
		return "a limit or default the log's jobs already obey"
	}
	return "does not bear on scheduling"
}

// priorityFlags maps PriorityFlags.
func (m *mapper) priorityFlags(p pair, bad func(string, ...any) error) error {
	for _, f := range strings.Split(p.Value, ",") {
		switch strings.ToUpper(strings.TrimSpace(f)) {
		case "NO_FAIR_TREE":
			m.c.Knobs.NoFairTree = true
			m.apply(pair{Key: p.Key, Value: f, Pos: p.Pos}, "no_fair_tree")
		case "", "FAIR_TREE", "CALCULATE_RUNNING", "ACCRUE_ALWAYS", "MAX_TRES":
			// Fair Tree is the default; running jobs' priorities, accrue
			// limits and TRES billing change no pending job's order here.
		default:
			return bad("flag %s is not modelled (supported: NO_FAIR_TREE, FAIR_TREE, CALCULATE_RUNNING, ACCRUE_ALWAYS, MAX_TRES)", f)
		}
	}
	return nil
}

// SchedulerParameters options: those policy slurm reads, in seconds
// (bf_window in minutes, as Slurm reads it), and those ignored because
// they tune only the controller's own cost or a feature no log job uses.
var (
	schedOptions = map[string]struct {
		knob  string
		scale int
		field func(*slurm.Knobs) *int
	}{
		"sched_interval":      {"sched_interval", 1, func(k *slurm.Knobs) *int { return &k.SchedInterval }},
		"default_queue_depth": {"default_queue_depth", 1, func(k *slurm.Knobs) *int { return &k.DefaultQueueDepth }},
		"bf_interval":         {"bf_interval", 1, func(k *slurm.Knobs) *int { return &k.BfInterval }},
		"bf_resolution":       {"bf_resolution", 1, func(k *slurm.Knobs) *int { return &k.BfResolution }},
		"bf_window":           {"bf_window", 60, func(k *slurm.Knobs) *int { return &k.BfWindow }},
		"bf_max_job_test":     {"bf_max_job_test", 1, func(k *slurm.Knobs) *int { return &k.BfMaxJobTest }},
	}
	// The controller's own cost: the model's passes take no time.
	costOptions = []string{"bf_continue", "bf_yield_interval", "bf_yield_sleep", "bf_max_time", "max_rpc_cnt",
		"max_sched_time", "sched_min_interval", "batch_sched_delay", "build_queue_timeout", "bf_busy_nodes",
		"pack_serial_at_end", "max_switch_wait", "bf_node_space_size", "default_gbytes"}
	// Features no log job uses (arrays, dependencies, het jobs, steps,
	// prologs, user commands).
	unusedOptions = []string{"bf_max_job_array_resv", "kill_invalid_depend", "enable_user_top", "disable_user_top",
		"salloc_wait_nodes", "sbatch_wait_nodes", "nohold_on_prolog_fail", "requeue_setup_env_fail", "allow_zero_lic",
		"enable_hetjob_steps", "disable_hetjob_steps", "permit_job_expansion", "max_array_tasks", "max_depend_depth",
		"preempt_reorder_count", "preempt_strict_order", "preempt_youngest_first", "reduce_completing_frag",
		"no_backup_scheduling", "no_env_cache", "spec_cores_first", "step_retry_count", "step_retry_time",
		"whole_hetjob", "ignore_numa", "inventory_interval", "extra_constraints", "time_min_as_soft_limit",
		"ignore_prefer_validation", "defer_batch"}
)

// schedulerParameters maps SchedulerParameters' options.
func (m *mapper) schedulerParameters(p pair, _ func(string, ...any) error) error {
	bad := func(format string, a ...any) error {
		return errAt(p.Pos, "key %s: %s", p.Key, fmt.Sprintf(format, a...))
	}
	for _, o := range strings.Split(p.Value, ",") {
		o = strings.TrimSpace(o)
		if o == "" {
			continue
		}
		name, val, hasVal := strings.Cut(o, "=")
		name = strings.ToLower(name)
		if opt, ok := schedOptions[name]; ok {
			x, err := wholeInt(val)
			if !hasVal || err != nil || x < 1 || x > (1<<30)/opt.scale {
				return bad("option %s: want a whole number ≥ 1", name)
			}
			*opt.field(&m.c.Knobs) = x * opt.scale
			m.apply(pair{Key: p.Key, Value: o, Pos: p.Pos}, opt.knob)
			continue
		}
		switch {
		case slices.Contains(costOptions, name):
			m.ignore(p.Pos, "SchedulerParameters "+name, "the controller's own cost: the model's passes take no time")
		case slices.Contains(unusedOptions, name):
			m.ignore(p.Pos, "SchedulerParameters "+name, "a feature no log job uses")
		default:
			return bad("option %s is not modelled (docs/site-config.md lists the options read and ignored)", name)
		}
	}
	return nil
}
