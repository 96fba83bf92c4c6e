// Package deepcopy copies a graph of Go values reachable from one pointer,
// preserving its aliasing: two pointers to one object in the original point
// to one object in the copy, two slices over one backing array share one
// array in the copy (at the same offsets, so that appending or reslicing
// behaves alike), a pointer into a slice's array points into the copied
// array, and a map referenced twice is copied once.
//
// It exists so that a policy's whole state — a pure state machine without
// goroutines, channels or clocks — can be forked: trace's fair start times
// (docs/studies.md §4.4, §6.17) run a copy of the policy on from a job's
// submit time with later arrivals withheld, instead of replaying from the
// start for every sampled job.
//
// The copy is made in two passes. The first walks the graph and records
// every memory region a pointer or a slice refers to (its address, its
// extent and its type); overlapping regions are merged into one object (a
// containing struct or array, or an array over the union of slices of one
// element type). The second allocates one new object per merged region and
// copies every value into it, mapping each old address to the same offset
// in the new object. Strings are shared (they are immutable). Channels and
// unsafe pointers are refused; functions are refused unless DropFuncs
// asks for them to be left nil in the copy (a closure bound to the old
// state would alias it). Replace lets a caller copy part of the graph
// itself: the pointers it names are not followed but set to the caller's
// copies (baseline.Core.Clone copies the Core by hand and its rule here).
package deepcopy
