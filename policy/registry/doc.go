// Package registry describes an allocation policy to the rest of the
// program in one value, the Descriptor, and keeps an ordered list of them,
// the Registry (docs/policies.md, "How a policy is described").
//
// A policy package (policy/fifo, policy/budget, …) exports one Descriptor:
// its name, a line for --help, its knobs with their defaults and their
// parsing from a config file, its constructor, its cost for the shards'
// balance, how much of a log's history it reads, and how figures draw it.
// policy/policies lists the descriptors in report order (policies.Default);
// the config parser, the studies and the figures look a policy up there
// instead of switching on its name, so that adding a policy is its package
// plus one line in that list. A Variant is a named knob preset of another
// policy (quota-fair, static-share), made a Descriptor of its own
// (docs/policies.md, "Variants").
//
// The package sits below every policy and every consumer: it imports only
// policy (the Allocator contract and its Config) and policy/baseline (the
// entitlements and history every share-based baseline reads).
package registry
