// Package sitemeter owns Bursar on a trace as a site would meter it
// (docs/studies.md §3.2, docs/traces.md "Bursar as a site meters it"),
// without changing the broker: a wrapper around a fresh policy.Broker
// that the trace studies replay in Bursar's place.
//
// The metered campaign is the allocation a site budgets: each group (the
// account), with R = its entitlement × pool and the bucket of the
// largest-job rule over the group's jobs (trace.Workload.GroupEnvelopes);
// the `meter: user` knob keeps one metered campaign per (user, group)
// pair, as revision 2 had it. Idle GPUs are not wasted: each group also
// has an unmetered scavenger campaign (g = 0, R = burst = the pool, the
// opportunistic class). After each tick's admission a job its meter holds
// back (its campaign's cap or tokens, not a lack of free GPUs) is
// withdrawn and filed whole on its group's scavenger, with its original
// submit time, if the idle GPUs can seat it; the next tick grants it
// after every metered request. A scavenger lease is never promoted; a
// metered request reclaims it as it reclaims any opportunistic lease
// (notice, grace, release), and the replay files the preempted job again
// on its metered campaign, with its original submit time. A scavenger
// request the next admission did not grant goes back to its metered
// campaign. A job its metered campaign can never hold (wider than its
// cap with a full bucket) waits in the site's park, outside the broker,
// and is filed on its scavenger by the same step, when idle GPUs can seat
// it: pending there, the broker would grant it the GPUs a wide metered
// job is reclaiming (a livelock, docs/traces.md). The journal names every lease of a job by the request id the
// replay filed it under, so trace.Replay's books read a moved job as
// their own.
package sitemeter
