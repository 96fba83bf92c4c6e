// Package baselinetest holds what the tests of every allocation policy
// share: a journal that keeps its records, and small campaign envelopes.
package baselinetest

import (
	"github.com/bursar-hpc/bursar/policy"
)

// Journal is a Recorder that keeps every record and its JSON line.
type Journal struct {
	Events []policy.Event
	Bytes  []byte
}

// Record keeps e.
func (j *Journal) Record(e policy.Event) {
	j.Events = append(j.Events, e)
	j.Bytes = e.AppendJSON(j.Bytes)
	j.Bytes = append(j.Bytes, '\n')
}

// Of returns the records of one kind, in journal order.
func (j *Journal) Of(k policy.EventKind) []policy.Event {
	var out []policy.Event
	for _, e := range j.Events {
		if e.Kind == k {
			out = append(out, e)
		}
	}
	return out
}

// Released returns the release records with the given reason.
func (j *Journal) Released(reason string) []policy.Event {
	var out []policy.Event
	for _, e := range j.Events {
		if e.Kind == policy.EventRelease && e.Reason == reason {
			out = append(out, e)
		}
	}
	return out
}

// Grant returns the grant record of lease id, and whether there is one.
func (j *Journal) Grant(id int) (policy.Event, bool) {
	for _, e := range j.Events {
		if e.Kind == policy.EventGrant && e.Lease == id {
			return e, true
		}
	}
	return policy.Event{}, false
}

// Env is an envelope with a sustained rate R (the share a baseline reads),
// a large budget and unmetered flows, in class cls.
func Env(name string, r float64, cls policy.Class) policy.Envelope {
	return policy.Envelope{Name: name, Budget: 1e9, Sustained: r, BurstCeiling: 1 << 20, Bucket: 1e6, Class: cls}
}

// Ticks advances a n ticks.
func Ticks(a policy.Allocator, n int) {
	for range n {
		a.Tick()
	}
}

// Config is a pool with the given grace and unmetered flows.
func Config(pool, grace int) policy.Config {
	c := policy.DefaultConfig(pool)
	c.Grace = grace
	return c
}
