// Package fairshare is Slurm's multifactor priority with classic fair share
// (studies.md §2, §6.9).
//
// Rule. A request's priority is W_fs·F + W_age·min(age / MaxAge, 1), with
// age = now − submitted and F = 2^(−U/S): U the campaign's decayed usage
// normalised by the decayed total (every campaign's, the filler's
// included, as Slurm normalises by the root's usage), S its share (R
// normalised over the campaigns other than the filler, studies.md §1). The
// filler has F = 0. Usage is charged every tick for every held GPU, notice
// periods included, and decays every tick: U ← U·2^(−1/h) + held, h the
// half-life PriorityDecayHalfLife (§6.9). A campaign with S = 0 has F = 0;
// with no usage anywhere, U/S is 0 and F = 1. The tree is flat (Slurm's
// NO_FAIR_TREE factor). Admission is EASY backfilling (policy/easy, via
// policy/baseline's AdmitEASY) in priority order, ties by submit time,
// then request id.
//
// Preemption: only the opportunistic class is preemptible, with the grace
// notice (Slurm's GraceTime); a blocked head that is not opportunistic may
// preempt opportunistic leases of other campaigns (and the filler's),
// lowest class first, newest first, minimal set (§6.6).
//
// Knobs and defaults (Slurm's): HalfLife 7 days, WFairshare 10000, WAge
// 1000, MaxAge 7 days. Sources:
// https://slurm.schedmd.com/priority_multifactor.html (the factors, the
// weights, PriorityDecayHalfLife, PriorityMaxAge, F = 2^(−U/S)) and
// https://slurm.schedmd.com/classic_fair_share.html.
package fairshare
