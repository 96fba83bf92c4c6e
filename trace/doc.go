// Package trace turns a real job log into a workload and replays it.
//
// It owns three things, all from docs/studies.md:
//
//   - The workload of §3: the replayable jobs of an SWF log (read by package
//     swf), or of a window of its submit times, as rigid requests; the
//     campaigns (one per user, or one per group by a knob), the group
//     hierarchy, the service class of each job (from its queue's name), the
//     shares (each campaign's fraction of the GPU-seconds the trace consumed,
//     or equal by a knob), the pool (MaxProcs unless set), and the Bursar
//     envelope of a trace campaign (see Workload.Envelope).
//   - ReplayEASY: the exact FCFS + EASY replay of §2.1, event-driven, using
//     the shared backfill pass of package policy/easy.
//   - The per-job records of every replay (JobRecord, §4.6: each start,
//     end, preemptions, lost work, state served / denied / unfinished, and
//     the wait the log recorded), from ReplayExact (the exact FCFS + EASY,
//     what `fifo` runs) and Replay (any policy).
//   - Measure: the metrics of §4 computed from those records alone, over a
//     measurement interval of submits (warm-up and cool-down replayed, not
//     measured): the three counts and the served fraction of the work,
//     waits and bounded slowdowns over every job not denied (unfinished
//     ones censored, flagged as lower bounds), useful / lost / held
//     GPU-seconds and idle_while_waiting as fractions of pool × span,
//     makespan and drain, and the convergence flag (§4.3).
//   - Fairness (§4.4, §6.17): fair-start-time unfairness (FairSample,
//     ExactFairStarts and ReplayOptions.FairStart, which fork the replay at
//     a sampled job's submit — CloneAllocator copies a policy's whole state
//     with internal/deepcopy — and FairStarts), users' normalised-wait
//     dispersion (NUWT), and the share-based daily Jain index against a
//     fifo control (FifoControl, Shares). Sabin & Sadayappan, JSSPP 2005;
//     Klusáček & Rudová 2012; Jain, Chiu & Hawe, DEC-TR-301, 1984.
//   - The priority tier of each queue (AssignTiers: by its name, else by
//     its longest recorded time, or a config's; docs/traces.md "Queues and
//     tiers"), and the model against the log (CompareToLog: a replay's
//     start times against the recorded ones, docs/studies.md §4.8).
//   - Summarize: revision 1's summary (Jain's index of usage ÷ share), kept
//     until the studies move to Measure; §6.4 retires it on a trace.
//
// It is deterministic: jobs, campaigns and groups are kept in slices in a
// fixed order (submit time then job number; campaign and group id), and no
// map is iterated on a path that affects a result.
//
// The logs are those of the Parallel Workloads Archive (Feitelson, Tsafrir &
// Krakov, J. Parallel Distrib. Comput. 74(10), 2014); docs/traces.md says
// what is read, how it maps, and what is counted.
package trace
