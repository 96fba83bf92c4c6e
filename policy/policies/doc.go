// Package policies names the seven allocation policies — the Bursar broker
// and the six baselines of docs/studies.md §2 — and builds any of them behind
// the policy.Allocator contract, so that a caller (the engine, a sweep)
// picks one by name.
package policies
