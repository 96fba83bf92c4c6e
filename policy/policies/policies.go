package policies

import (
	"image/color"

	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/budget"
	"github.com/bursar-hpc/bursar/policy/fairshare"
	"github.com/bursar-hpc/bursar/policy/fifo"
	"github.com/bursar-hpc/bursar/policy/priority"
	"github.com/bursar-hpc/bursar/policy/quota"
	"github.com/bursar-hpc/bursar/policy/registry"
	"github.com/bursar-hpc/bursar/policy/slurm"
	"github.com/bursar-hpc/bursar/policy/static"
)

// Bursar is the broker's name among the policies.
const Bursar = "bursar"

// BursarPolicy describes the Bursar broker (package policy) to the
// program: it reads the config whole (GrantTimeOnly included) and its
// campaigns' envelopes (R is the entitlement × pool on a trace), and no
// knobs.
var BursarPolicy = registry.Descriptor{
	Name:  Bursar,
	Doc:   "the Bursar broker: envelopes of a guarantee, a sustained rate and a token bucket",
	New:   func(cfg policy.Config, _ registry.Knobs) (policy.Allocator, error) { return policy.New(cfg) },
	Cost:  3,
	Style: registry.Style{Color: color.Gray{Y: 0}, Marker: registry.Circle},
}

// Default is every policy of the program, in the order reports use: the
// broker, then the six baselines of docs/studies.md §2, each variant
// (registry.Variant) after its base. A new policy is one line here.
//
// Their costs (Descriptor.Cost, for the shards' balance) follow the jobs
// and what each executed tick costs, every policy skipping from event to
// event: the single-run CPU times on the embedded excerpt (2,661 jobs) and
// on the full SDSC-SP2 log (54k jobs), relative to fifo, rounded
// (BenchmarkReplayPolicyExcerpt, BenchmarkReplayPolicySDSC on a 2-core
// machine, December 2026): static 0.4–0.5, priority 1.4–2.9, fairshare
// 1.6–2.5, quota-fair 1.4–5.8 (re-measured 2 December: 41 ms against
// fifo's 29 on the excerpt, 2.7–2.8 s against 0.49 s on the full log,
// whose 44k fair-sharing preemptions requeue and retry), bursar 3.1–3.2,
// budget 6–41 (budget on a contended trace preempts and requeues, and its
// queue grows). Re-measured 6 December on a loaded machine (CPU time,
// excerpt and full log): fifo 12 ms and 0.20 s, quota at Kueue's defaults
// 10 ms and 0.19 s (1), quota-fair 21 ms and 1.17 s, static-share 7 ms
// and 0.19 s, static with condo partitions 7 ms and 7.1 s (on the whole
// log its minima are scaled: 10,720 jobs denied against 7,747, and the
// partitions' queues run long), slurm 15 ms and 0.28 s. Only the ordering and rough ratios matter.
var Default = registry.New(
	BursarPolicy,
	fifo.Policy,
	priority.Policy,
	static.Policy,
	static.SharePolicy, // variant: static with partitions share
	fairshare.Policy,
	quota.Policy,
	quota.FairPolicy, // variant: quota with fair-sharing preemption
	budget.Policy,
	slurm.Policy, // optional: not in Names, the default lists
	// The order the knobs were hashed in (run inputs, cache keys) when
	// they were one struct; a later policy's knobs follow these.
).KnobsFirst(priority.Name, static.Name, quota.Name, fairshare.Name, budget.Name)

// Names lists the policies in the order reports use.
var Names = Default.Names()

// Knobs holds every policy's settings; each policy reads its own
// (registry.Knobs).
type Knobs = registry.Knobs

// DefaultKnobs are each policy's documented defaults.
func DefaultKnobs() Knobs { return Default.DefaultKnobs() }

// TraceKnobs are DefaultKnobs with fairshare and budget recalculating
// every 5 minutes (Slurm's PriorityCalcPeriod default) instead of every
// tick: the knobs of the trace studies (trace, budget-knobs,
// agents-arrive). Over a two-year log the per-tick rule of docs/studies.md
// §6.9 keeps both policies from skipping quiet ticks and costs minutes per
// replay; Slurm itself recalculates per period (docs/model-choices.md).
func TraceKnobs() Knobs { return Default.TraceKnobs() }

// New builds the policy called name on cfg (Default.New). Bursar reads cfg
// whole (GrantTimeOnly included) and its campaigns' envelopes (R is the
// entitlement × pool on a trace); the baselines read its pool, grace and
// flow capacities, and the knobs' Entitlements and History.
func New(name string, cfg policy.Config, knobs Knobs) (policy.Allocator, error) {
	return Default.New(name, cfg, knobs)
}
