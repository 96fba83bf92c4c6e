package kueueconf

import (
	"fmt"
	"slices"
)

// finish checks the objects against each other and sets the knobs: the
// ClusterQueues share one cohort and agree on every setting quota holds
// once (queueing strategy, preemption, borrowing limit); every flavor and
// ClusterQueue named is defined.
func (p *parser) finish() error {
	c := p.c
	if len(p.queues) == 0 {
		return &Error{File: c.File, Line: 0, Msg: "no ClusterQueue: the pool is the ClusterQueues' nominal quota"}
	}
	if len(p.cohorts) > 1 {
		return &Error{File: c.File, Line: p.cohortLines[1], Msg: fmt.Sprintf("cohorts %s and %s: the model has one cohort, the pool", p.cohorts[0], p.cohorts[1])}
	}
	first := p.queues[0]
	for _, q := range p.queues[1:] {
		if q.cohort != first.cohort {
			return &Error{File: c.File, Line: q.line, Msg: fmt.Sprintf("ClusterQueue %s is in cohort %q, %s in %q: the model puts every queue in one cohort, or none", q.name, q.cohort, first.name, first.cohort)}
		}
	}
	c.Cohort = first.cohort
	for _, f := range p.usedFlavors {
		if len(p.flavors) > 0 && !p.flavors[f.name] {
			return &Error{File: c.File, Line: f.line, Msg: fmt.Sprintf("flavor %q has no ResourceFlavor", f.name)}
		}
	}
	for _, r := range p.localQueueRef {
		if !slices.ContainsFunc(p.queues, func(q queueSettings) bool { return q.name == r.name }) {
			return &Error{File: c.File, Line: r.line, Msg: fmt.Sprintf("key spec.clusterQueue: ClusterQueue %q is not defined", r.name)}
		}
	}
	// The resource: a GPU one if any queue covers one, else cpu.
	c.Resource = "cpu"
	for _, q := range p.queues {
		for name := range q.nominal {
			if isGPU(name) && (c.Resource == "cpu" || name < c.Resource) {
				c.Resource = name
			}
		}
	}
	for _, q := range p.queues {
		c.Queues = append(c.Queues, Queue{Name: q.name, Nominal: q.nominal[c.Resource], Line: q.line})
		c.Pool += q.nominal[c.Resource]
	}
	if c.Pool < 1 {
		return &Error{File: c.File, Line: first.line, Msg: fmt.Sprintf("the ClusterQueues' nominal quota of %s is 0: no pool", c.Resource)}
	}
	for _, s := range []struct {
		key string
		get func(queueSettings) setting
	}{
		{"queueing_strategy", func(q queueSettings) setting { return q.strategy }},
		{"reclaim_within_cohort", func(q queueSettings) setting { return q.reclaim }},
		{"within_cluster_queue", func(q queueSettings) setting { return q.within }},
		{"borrow_within_cohort", func(q queueSettings) setting { return q.borrow }},
	} {
		v := s.get(first)
		for _, q := range p.queues[1:] {
			if w := s.get(q); w.value != v.value {
				return &Error{File: c.File, Line: q.line, Msg: fmt.Sprintf("ClusterQueue %s's %s is %v, %s's %v: the model holds one for every queue", q.name, s.key, w.value, first.name, v.value)}
			}
		}
		c.Knobs = append(c.Knobs, Knob{Key: s.key, Value: v.value, From: v.from})
	}
	// Borrowing: none without a cohort; else the queues' common limit.
	limit := setting{-1, "Kueue's default (no borrowingLimit)"}
	if first.borrowingLimit.value != nil {
		limit = first.borrowingLimit
	}
	for _, q := range p.queues[1:] {
		if q.borrowingLimit.value != first.borrowingLimit.value {
			return &Error{File: c.File, Line: q.line, Msg: fmt.Sprintf("ClusterQueue %s's borrowingLimit differs from %s's: the model holds one for every queue", q.name, first.name)}
		}
	}
	if c.Cohort == "" {
		limit = setting{0, "no cohort: no queue borrows"}
	}
	c.Knobs = append(c.Knobs, Knob{Key: "borrowing_limit", Value: limit.value, From: limit.from})
	fs := setting{false, "Kueue's default (Configuration fairSharing.enable false)"}
	if p.fairSharing != nil {
		fs = *p.fairSharing
	}
	c.Knobs = append(c.Knobs, Knob{Key: "fair_sharing", Value: fs.value, From: fs.from})
	if p.strategies != nil {
		c.Knobs = append(c.Knobs, Knob{Key: "preemption_strategies", Value: p.strategies.value, From: p.strategies.from})
	}
	return nil
}
