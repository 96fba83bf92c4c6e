// Package policies lists the seven allocation policies — the Bursar broker
// and the six baselines of docs/studies.md §2 — as the registry the
// program runs with (Default, a registry.Registry of each policy
// package's descriptor), and builds any of them behind the
// policy.Allocator contract, so that a caller (the engine, a sweep) picks
// one by name (docs/policies.md).
package policies
