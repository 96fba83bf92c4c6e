// Package fairshare is Slurm's multifactor priority with classic fair share
// (docs/studies.md §2, §6.9).
//
// Rule. A request's priority is W_fs·F + W_age·min(age / MaxAge, 1), with
// age = now − submitted and F = 2^(−U/S): U the campaign's decayed usage
// normalised by the decayed total (every campaign's, the filler's
// included, as Slurm normalises by the root's usage), S its entitlement
// (baseline.Campaign.Share, docs/studies.md §1: on a trace its member
// share of its group's entitlement, on the agent scenario R normalised
// over the campaigns other than the filler). The
// filler has F = 0. Usage is charged for every held GPU, notice periods
// included, and decays once per calculation period P (Slurm's
// PriorityCalcPeriod; default 1, every tick, as §6.9; the trace studies
// use Slurm's default, 300 s): at the end of every tick that is a
// multiple of P, U ← U·2^(−P/h) + the GPU-seconds held in the period, h the
// half-life PriorityDecayHalfLife; the priorities of a period's ticks use F
// and the age as at its first tick. P = 1 is docs/studies.md §6.9's per-tick
// rule, U ← U·2^(−1/h) + held, bit for bit. Between calculations the rule
// is steady (baseline.Paced), so a trace replay skips from event to event. A campaign with S = 0 has F = 0;
// with no usage anywhere, U/S is 0 and F = 1. The tree is flat (Slurm's
// NO_FAIR_TREE factor). Admission is EASY backfilling (policy/easy, via
// policy/baseline's AdmitEASY) in priority order, ties by submit time,
// then request id. On a trace's queue the pass reads a queue kept between
// passes (baseline.Keyed: each campaign's requests in submit order, which
// is their priority order, merged by their heads' priorities, found from
// a heap of ceilings on them, KeyCeiling, so that a new period keys only
// the heads that could come first), not the whole pending list
// (docs/traces.md "Work per job").
//
// Usage before the replay (docs/studies.md §6.16): a campaign registers
// with the decayed usage its history (baseline.Core.SetHistory) leaves at
// tick 0, charged and decayed per tick (Preload).
//
// Preemption: only the opportunistic class is preemptible, with the grace
// notice (Slurm's GraceTime); a blocked head that is not opportunistic may
// preempt opportunistic leases of other campaigns (and the filler's),
// lowest class first, newest first, minimal set (§6.6).
//
// Knobs and defaults (Slurm's): HalfLife 7 days, WFairshare 10000, WAge
// 1000, MaxAge 7 days, CalcPeriod 300 s. Sources:
// https://slurm.schedmd.com/priority_multifactor.html (the factors, the
// weights, PriorityDecayHalfLife, PriorityMaxAge, F = 2^(−U/S)) and
// https://slurm.schedmd.com/classic_fair_share.html and
// https://slurm.schedmd.com/slurm.conf.html (PriorityCalcPeriod).
package fairshare
