// Package arrive is the agents-arrive study of docs/studies.md
// §3.3, §5 and §6.14: k agent campaigns from the paper's cast (storm,
// naive-sci, adaptive-sci; model.md §6, §7) arrive on a machine that is
// replaying a real trace, and the study measures what the trace's own
// users lose — their mean bounded slowdown and p95 wait (§4) — per
// policy, against k.
//
// It owns:
//
//   - The cast (Cast): the k-th agent is Mix[(k−1) mod 3] (storm,
//     naive-sci, adaptive-sci, storm, …), its GPU quantities (requests
//     and targets, guarantees, R, burst, B) scaled by pool/512 rounded
//     down, at least 1 (§6.14). A storm storms for the agents' whole stay;
//     budgets grow with the stay (budget × stay / 7200 s, the paper's run).
//   - The site (an unexported policy.Allocator around the site's policy):
//     trace.Replay drives it unchanged, and it steps an engine.Crew of the
//     agents inside each Tick, before the policy's own tick (the engine's
//     order). The agents register after the trace's campaigns, so that
//     the baselines normalise shares over all campaigns, users and agents
//     (§6.14; policy/baseline reshares at each registration), and step
//     at their ticks 1 … stay. With no agents the site is the policy:
//     k = 0 is exactly the plain replay (a test checks it, ticks
//     included). Event skipping is the policy's, except that no tick is
//     skipped while the agents are on the machine.
//   - Two modes: ModeSite, the agents submit to the site's policy as
//     ordinary users; ModeMetered, an agent's request must first pass
//     the Bursar broker's rate cap for its envelope (model.md §5 step 2,
//     prepaid leases), against a GPU bucket kept as the broker keeps it
//     (model.md §3: tokens = clamp(tokens + R − held, 0, B)), before the
//     site's policy sees it. The gate counts what the agent already has
//     outstanding, not only what it holds, because the site's policy will
//     not check the cap again at admission.
//   - Under the Bursar broker itself the agents' guarantees are reserved
//     for them (model.md §5, grantable), so a trace job wider than the
//     pool less the agents' guarantees could never start; the site denies
//     it as a request its campaign can never hold (§6.1) and counts it
//     (Result.Stranded). A replay that still cannot finish stops at
//     trace.Replay's horizon; its unfinished jobs are counted
//     (Result.Unfinished) and left out of the users' metrics.
//   - Specs, NewPlan and ExecutePlan (sweep.ExecuteStudy: a bounded
//     worker pool, results in spec order, the same at any worker count;
//     --shard, merge and --cache as for the sweeps; Codec writes a Result
//     exactly into shard files and cache entries), Execute (the same
//     without shard or cache), Points (means over seeds with Student t
//     95 % intervals, sweep.TInterval), summary.json, runs.csv, the table
//     and fig_agents_arrive.
//
// Seeds matter only where a science agent is in the cast (k ≥ 2): they
// draw its task list (each science agent its own stream).
package arrive
