// Package arrive is the agents-arrive study of docs/studies.md §3.3, §5
// and §6.14: the facility's question — if we put Bursar in front of the
// scheduler we run today, are our users protected when agents arrive? k
// agent campaigns from the paper's cast (storm, naive-sci, adaptive-sci;
// model.md §6, §7) arrive on a machine replaying windows of a real log,
// and the study measures what the log's own users lose, per site policy,
// with the agents unmetered against metered.
//
// It owns:
//
//   - The contrast (Modes, BursarLine). For every site policy (fifo,
//     priority, static, fairshare, quota, budget) the agents either submit
//     to it as its users do (ModeUnmetered), or each agent request first
//     passes Bursar's cap and token checks for the agent's envelope
//     (ModeMetered; model.md §3, §5: the prepaid cap max(min(burst,
//     trunc(R + tokens ÷ duration)), g) less what the agent holds and has
//     pending, against a bucket kept as the broker keeps it). The users
//     are never metered. bursar is one more line, not a mode: Bursar as
//     the whole site policy, users metered too. k = 0 has no agents and
//     no mode: one run per window stands for both modes and every seed.
//   - The cast (Cast): the k-th agent is Mix[(k−1) mod 3], its GPU
//     quantities scaled by pool/512 × agent_scale rounded down, at least
//     1; a storm storms for the whole stay and budgets grow with the stay.
//   - The agents' share (Entitlements, WithAgentShare): the agents form
//     one group entitled to agent_share of the pool, split equally among
//     them, and the users' entitlements (and so, under Bursar, their
//     rates R) are scaled to the rest, so that adding agents does not
//     quietly dilute every user.
//   - When (Arrival): the agents arrive after the warm-up at a time drawn
//     from the seed and the window, so that their whole stay falls among
//     the measured submits, and leave at its end (their leases released).
//   - The agents on the site (an unexported trace.Actor): trace.Replay
//     drives the site's policy itself and steps the agents as its actor
//     (docs/traces.md, "The replay driver"): they register after the
//     log's campaigns, step just before each of the policy's ticks (the
//     engine's order), and no tick is skipped while they are on the
//     machine. They reach the policy through a gate that meters the
//     metered agents' requests; the actor counts what each agent got
//     (GPU-seconds, requests, refusals, grants and expiries from the
//     policy's journal). Under Bursar the agents' guarantees are
//     reserved, so a trace job wider than the pool less them is denied
//     (Result.Stranded).
//   - The study (Study): windows, warm-up and cool-down, the log's usage
//     before each window for fairshare and budget (docs/studies.md §6.16)
//     and the per-job records are the trace studies' (tracestudy.Windows,
//     History, JobRows; trace.Measure for served / denied / unfinished,
//     censored waits and convergence). Each run measures the users over
//     the window's measured jobs and over the jobs submitted during the
//     stay. Plan, NewPlan and ExecutePlan run it through
//     sweep.ExecuteStudy (--shard, merge and --cache; Codec writes a
//     Result exactly), in plan order at any worker count. FromConfig
//     (setup.go) turns the study's config and the flags given into its
//     job (sweep.Study), reading the log as tracestudy.ReadCommon does.
//   - The estimates (Points, Contrasts): seeds are averaged inside a
//     window first (runs on one window are not independent), then each
//     point is the mean over windows with a 95 % Student t interval over
//     windows (docs/studies.md §5); contrasts are paired differences,
//     seed by seed inside a window, then over windows: metered −
//     unmetered, and each line − its k = 0.
//   - The outputs (Write, PrintTable, WriteFigure): summary.json,
//     runs.csv, agents.csv, the table and fig_agents_arrive (docs/metrics.md).
//
// The replay is open-loop: the log's users submit as they did whatever
// the load, so the study measures what the agents would cost them, not
// how they would react.
package arrive
