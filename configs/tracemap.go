package configs

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/priority"
	"gopkg.in/yaml.v3"
)

// TraceMapping is how a trace study maps a log onto the policies and what
// it measures (docs/studies.md §3, §4.5, §6.16; docs/traces.md): the knobs
// a config's `by`, `classes`, `shares`, `bucket`, `meter`, `restart`, `warmup`,
// `cooldown` and `windows` keys set, and the trace commands' flags of the
// same names. A zero field was not set: the command's default applies.
type TraceMapping struct {
	// By is "user" or "group": what one campaign is.
	By string
	// Classes maps a queue (its header name, or its number in decimal) to
	// a service class.
	Classes map[string]policy.Class
	// Tiers maps a queue (keyed as Classes) to a priority tier's name
	// (TraceTiers), over the rule that ranks a log's numbered queues by
	// their longest recorded time (docs/traces.md, "Priority tiers").
	Tiers map[string]string
	// Shares is the entitlement rule: one of ShareRules.
	Shares string
	// Bucket is Bursar's bucket on a trace: "largest-job" or "hours:N".
	Bucket string
	// Meter is what Bursar meters on a trace: "group" (the account a
	// site budgets) or "user" (each campaign on its own).
	Meter string
	// Restart is every policy's restart rule for preempted jobs: "zero"
	// or "checkpoint:S" (one rule per study, docs/studies.md §6.7).
	Restart string
	// Warmup and Cooldown are seconds of submits replayed but not
	// measured at a window's start and end; nil: not set.
	Warmup, Cooldown *int64
	// Lookback is how much of the log before a window `shares: lookback`
	// reads, in seconds, at least MinLookback; nil: not set (90 days).
	Lookback *int64
	// LeadIn is the lead-in replayed before each of several windows:
	// "auto" (the rule of docs/studies.md §4.5), a duration of at most
	// 90 days, or "none" (as "0"); "" not set (auto for trace, none for
	// the other studies).
	LeadIn string
	// Windows is N windows of D seconds; nil: not set (one window, the
	// whole log or --window).
	Windows *WindowsSpec
}

// WindowsSpec is `--windows N×D`: N disjoint windows of D seconds, or
// `--windows D`: N by the default rule, min(12, ⌊span ÷ D⌋)
// (docs/studies.md §5.1).
type WindowsSpec struct {
	N    int   // 0: by the default rule
	Days int64 // D in days (the only unit: windows are days long)
}

func (w WindowsSpec) String() string {
	if w.N == 0 {
		return fmt.Sprintf("%dd", w.Days)
	}
	return fmt.Sprintf("%dx%dd", w.N, w.Days)
}

// ShareRules are the values of `shares` (docs/studies.md §1).
var ShareRules = []string{"lookback", "groups", "window", "users", "equal-groups", "equal-users"}

// TraceClasses are the classes a queue may map to (docs/studies.md §3).
var TraceClasses = []string{"interactive", "agent-burst", "opportunistic"}

// TraceTiers are the priority tiers a queue may map to, highest first
// (docs/studies.md §2).
var TraceTiers = func() []string {
	var ts []string
	for t := range priority.Tiers {
		ts = append(ts, t.String())
	}
	return ts
}()

// traceMappingKeys are the keys of trace.yaml and budget-knobs.yaml that
// set a TraceMapping.
var traceMappingKeys = []string{"by", "classes", "tiers", "shares", "bucket", "meter", "restart", "warmup", "cooldown", "windows", "lookback", "lead_in"}

// MinLookback is the shortest lookback `shares: lookback` reads: 90 days
// of the log before the window (docs/studies.md §1).
const MinLookback = 90 * 86400

// CheckLeadIn checks a `lead_in` value: auto, none, or a duration of at
// most 90 days (the lookback the windows are laid after).
func CheckLeadIn(s string) error {
	if s == "auto" || s == "none" {
		return nil
	}
	d, err := ParseDuration(s)
	if err != nil {
		return fmt.Errorf("%q: want auto, none or a duration such as 7d", s)
	}
	if d > MinLookback {
		return fmt.Errorf("%q: at most 90d", s)
	}
	return nil
}

// CheckLookback checks a lookback in seconds: at least MinLookback.
func CheckLookback(d int64) error {
	if d < MinLookback {
		return fmt.Errorf("%d s: a lookback is at least 90d (%d s)", d, MinLookback)
	}
	return nil
}

// maxWindows bounds --windows' N: far more than any study needs.
const maxWindows = 1000

// ParseWindows reads N×D: "4x14d", "4×14d" or "4x14" (D in days), or D
// alone ("14d"): N then follows the default rule (N 0 here).
func ParseWindows(s string) (WindowsSpec, error) {
	t := strings.ReplaceAll(strings.TrimSpace(s), "×", "x")
	a, b, ok := strings.Cut(t, "x")
	n := 0
	if !ok {
		b = a
	} else {
		var err error
		n, err = strconv.Atoi(strings.TrimSpace(a))
		if err != nil || n < 1 || n > maxWindows {
			return WindowsSpec{}, fmt.Errorf("%q: N must be a whole number of windows from 1 to %d", s, maxWindows)
		}
	}
	d, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(b), "d"), 10, 64)
	if err != nil || d < 1 || d > 36500 {
		return WindowsSpec{}, fmt.Errorf("%q: D must be a whole number of days from 1 to 36500, e.g. 12x14d, or 14d for the default N", s)
	}
	return WindowsSpec{N: n, Days: d}, nil
}

// ParseDuration reads a duration of a trace study: whole seconds ("3600",
// "3600s"), minutes ("30m"), hours ("12h") or days ("1d", "0.5d"), ≥ 0.
func ParseDuration(s string) (int64, error) {
	t := strings.TrimSpace(s)
	unit := int64(1)
	for _, u := range []struct {
		suffix string
		s      int64
	}{{"d", 86400}, {"h", 3600}, {"m", 60}, {"s", 1}} {
		if v, ok := strings.CutSuffix(t, u.suffix); ok {
			t, unit = v, u.s
			break
		}
	}
	x, err := strconv.ParseFloat(strings.TrimSpace(t), 64)
	if err != nil || x < 0 || math.IsNaN(x) || x*float64(unit) > 100*365*86400 {
		return 0, fmt.Errorf("%q: want a duration ≥ 0 such as 1d, 12h, 30m or 3600 (seconds)", s)
	}
	v := x * float64(unit)
	if v != math.Trunc(v) {
		return 0, fmt.Errorf("%q: not a whole number of seconds", s)
	}
	return int64(v), nil
}

// CheckBucket checks a `bucket` value: largest-job or hours:N, N > 0.
func CheckBucket(s string) error {
	if s == "largest-job" {
		return nil
	}
	if h, ok := strings.CutPrefix(s, "hours:"); ok {
		if x, err := strconv.ParseFloat(h, 64); err == nil && x > 0 && !math.IsInf(x, 0) {
			return nil
		}
	}
	return fmt.Errorf("%q: want largest-job or hours:N (N > 0 hours of R)", s)
}

// CheckRestart checks a `restart` value: zero, checkpoint (an hour) or
// checkpoint:S, S > 0 seconds.
func CheckRestart(s string) error {
	if s == "zero" || s == "checkpoint" {
		return nil
	}
	if v, ok := strings.CutPrefix(s, "checkpoint:"); ok {
		if x, err := strconv.ParseInt(v, 10, 64); err == nil && x > 0 && x <= math.MaxInt32 {
			return nil
		}
	}
	return fmt.Errorf("%q: want zero or checkpoint:S (a checkpoint every S > 0 seconds of run)", s)
}

// CheckMeter checks a `meter` value.
func CheckMeter(s string) error {
	if s == "group" || s == "user" {
		return nil
	}
	return fmt.Errorf("%q: want group or user (what Bursar meters on a trace)", s)
}

// CheckBy checks a `by` value.
func CheckBy(s string) error {
	if s == "user" || s == "group" {
		return nil
	}
	return fmt.Errorf("%q: want user or group (what one campaign is)", s)
}

// CheckShares checks a `shares` value.
func CheckShares(s string) error {
	if contains(ShareRules, s) {
		return nil
	}
	return fmt.Errorf("%q: want one of %s%s", s, strings.Join(ShareRules, ", "), suggest(s, ShareRules))
}

// ParseClasses reads `QUEUE=CLASS,…` (the --classes flag).
func ParseClasses(s string) (map[string]policy.Class, error) {
	out := map[string]policy.Class{}
	for _, kv := range strings.Split(s, ",") {
		q, c, ok := strings.Cut(strings.TrimSpace(kv), "=")
		q, c = strings.TrimSpace(q), strings.TrimSpace(c)
		if !ok || q == "" {
			return nil, fmt.Errorf("%q: want QUEUE=CLASS,… (e.g. standby=opportunistic)", kv)
		}
		if !contains(TraceClasses, c) {
			return nil, fmt.Errorf("queue %q: class %q: want %s", q, c, strings.Join(TraceClasses, ", "))
		}
		if _, dup := out[q]; dup {
			return nil, fmt.Errorf("queue %q given twice", q)
		}
		cl, _ := policy.ParseClass(c)
		out[q] = cl
	}
	return out, nil
}

// traceMappingKey reads one of traceMappingKeys into m.
func (p *parser) traceMappingKey(m *TraceMapping, key string, v *yaml.Node) error {
	text := func(check func(string) error) (string, error) {
		s, err := p.str(v, key)
		if err != nil {
			return "", err
		}
		if err := check(s); err != nil {
			return "", p.errAt(v, key, "%v", err)
		}
		return s, nil
	}
	dur := func() (*int64, error) {
		s := v.Value
		if v.Kind != yaml.ScalarNode {
			return nil, p.errAt(v, key, "want a duration such as 1d, got %s", describe(v))
		}
		d, err := ParseDuration(s)
		if err != nil {
			return nil, p.errAt(v, key, "%v", err)
		}
		return &d, nil
	}
	var err error
	switch key {
	case "by":
		m.By, err = text(CheckBy)
	case "shares":
		m.Shares, err = text(CheckShares)
	case "bucket":
		m.Bucket, err = text(CheckBucket)
	case "meter":
		m.Meter, err = text(CheckMeter)
	case "restart":
		m.Restart, err = text(CheckRestart)
	case "warmup":
		m.Warmup, err = dur()
	case "cooldown":
		m.Cooldown, err = dur()
	case "lead_in":
		m.LeadIn, err = text(CheckLeadIn)
	case "lookback":
		if m.Lookback, err = dur(); err == nil {
			if err = CheckLookback(*m.Lookback); err != nil {
				return p.errAt(v, key, "%v", err)
			}
		}
	case "windows":
		var s string
		if s, err = p.str(v, key); err == nil {
			var w WindowsSpec
			if w, err = ParseWindows(s); err != nil {
				return p.errAt(v, key, "%v", err)
			}
			m.Windows = &w
		}
	case "tiers":
		m.Tiers = map[string]string{}
		err = p.queueMap(v, key, "tier", TraceTiers, func(q, t string) { m.Tiers[q] = t })
	case "classes":
		m.Classes = map[string]policy.Class{}
		err = p.queueMap(v, key, "class", TraceClasses, func(q, c string) { m.Classes[q], _ = policy.ParseClass(c) })
	}
	return err
}

// queueMap reads a mapping of queues (by name, or number) to one of
// allowed (a `what`: class, tier) and hands each pair to set.
func (p *parser) queueMap(v *yaml.Node, key, what string, allowed []string, set func(queue, value string)) error {
	return p.mapping(v, key, nil, func(q string, _, vv *yaml.Node) error {
		x, err := p.str(vv, join(key, q))
		if err != nil {
			return err
		}
		if !contains(allowed, x) {
			return p.errAt(vv, join(key, q), "unknown %s %q%s (want %s)", what, x, suggest(x, allowed), strings.Join(allowed, ", "))
		}
		set(q, x)
		return nil
	})
}
