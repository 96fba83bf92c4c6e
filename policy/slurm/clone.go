package slurm

import (
	"slices"

	"github.com/bursar-hpc/bursar/policy/baseline"
	"github.com/bursar-hpc/bursar/policy/fairshare"
)

// CloneRule is a copy of the rule for a copy of its Core
// (baseline.RuleCloner), for a fair start's fork: every table copied,
// the usage books bound to the copy. The reflective copy the Core makes
// of a rule that does not copy itself walked every element of the Fair
// Tree's tables and the kept queue at each fork. TestCloneRuleCopiesEveryField
// checks it against that copy, field for field.
func (r *Rule) CloneRule(from, to *baseline.Core) baseline.Rule {
	c := *r
	c.queue = r.queue.Clone()
	if r.usage != nil {
		c.usage = r.usage.CloneRule(from, to).(*fairshare.Rule)
	}
	c.prio = r.prio.clone()
	c.bf = r.bf.clone()
	c.sorted, c.fresh, c.merged = slices.Clone(r.sorted), slices.Clone(r.fresh), slices.Clone(r.merged)
	c.filed = slices.Clone(r.filed)
	c.keys = slices.Clone(r.keys)
	c.fillers = slices.Clone(r.fillers)
	return &c
}

// clone is a copy of the priorities that shares no table with them.
func (p *priorities) clone() priorities {
	c := *p
	c.fs = slices.Clone(p.fs)
	c.tree = p.tree.clone()
	return c
}

// clone is a copy of the tree's tables that shares none of them.
func (t *fairTree) clone() fairTree {
	c := *t
	c.start, c.mems = slices.Clone(t.start), slices.Clone(t.mems)
	c.memGroup, c.memAt = slices.Clone(t.memGroup), slices.Clone(t.memAt)
	c.part, c.none, c.group = slices.Clone(t.part), slices.Clone(t.none), slices.Clone(t.group)
	c.frac = slices.Clone(t.frac)
	c.gpart, c.gnone = slices.Clone(t.gpart), slices.Clone(t.gnone)
	c.liveMems = slices.Clone(t.liveMems)
	c.usage, c.acctUsage = slices.Clone(t.usage), slices.Clone(t.acctUsage)
	c.accounts, c.users = slices.Clone(t.accounts), slices.Clone(t.users)
	c.before, c.posOf = slices.Clone(t.before), slices.Clone(t.posOf)
	c.sortedAt, c.pos = slices.Clone(t.sortedAt), slices.Clone(t.pos)
	c.after, c.afterAt = slices.Clone(t.after), slices.Clone(t.afterAt)
	c.fs, c.fsAt = slices.Clone(t.fs), slices.Clone(t.fsAt)
	return c
}

// clone is a copy of the pass's scratch that shares none of it.
func (b *backfill) clone() backfill {
	c := *b
	c.m = freeMap{at: slices.Clone(b.m.at), free: slices.Clone(b.m.free)}
	c.ends, c.jobs, c.least = slices.Clone(b.ends), slices.Clone(b.jobs), slices.Clone(b.least)
	c.reserved = slices.Clone(b.reserved)
	return c
}
