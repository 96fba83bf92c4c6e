package slurmconf

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// node is one node as its NodeName line (and the defaults before it)
// defines it.
type node struct {
	name     string
	cpus     int
	gpus     int
	features []string
	future   bool
}

// nodeKeys are the NodeName keys the pool reads; the others are ignored.
var nodeKeys = []string{"nodename", "cpus", "boards", "sockets", "socketsperboard", "corespersocket", "threadspercore",
	"gres", "feature", "features", "state"}

// partKeys are the PartitionName keys the mapping reads.
var partKeys = []string{"partitionname", "nodes", "default", "maxtime", "prioritytier", "priorityjobfactor", "oversubscribe", "state"}

// attrs are a record line's pairs by lower-case key over its defaults.
type attrs map[string]pair

func (a attrs) get(k string) (pair, bool) { p, ok := a[k]; return p, ok }

// recordAttrs lays line l's pairs over defaults, listing the keys
// outside known as ignored with why.
func (m *mapper) recordAttrs(l line, defaults attrs, known []string, why string) (attrs, error) {
	a := attrs{}
	for k, p := range defaults {
		a[k] = p
	}
	for _, p := range l.Pairs {
		k := strings.ToLower(p.Key)
		if !slices.Contains(known, k) {
			m.ignore(p.Pos, p.Key, why)
			continue
		}
		a[k] = p
	}
	return a, nil
}

// pool reads the nodes, the node sets and the default partition.
func (m *mapper) pool() error {
	nodes, err := m.readNodes()
	if err != nil {
		return err
	}
	byName := map[string]int{}
	for i, n := range nodes {
		byName[n.name] = i
	}
	sets := map[string][]string{}
	for _, l := range m.nodesets {
		name := l.Pairs[0].Value
		var members []string
		for _, p := range l.Pairs[1:] {
			switch strings.ToLower(p.Key) {
			case "nodes":
				hosts, err := expandHostlist(p.Value)
				if err != nil {
					return errAt(p.Pos, "key Nodes: %v", err)
				}
				members = append(members, hosts...)
			case "feature":
				for _, n := range nodes {
					if slices.Contains(n.features, p.Value) {
						members = append(members, n.name)
					}
				}
			default:
				return errAt(p.Pos, "key %s: a NodeSet takes Nodes or Feature", p.Key)
			}
		}
		sets[name] = members
	}
	part, err := m.defaultPartition()
	if err != nil || part == nil {
		return err
	}
	c := m.c
	np, _ := part.get("nodes")
	var names []string
	switch {
	case strings.EqualFold(np.Value, "all"):
		for _, n := range nodes {
			names = append(names, n.name)
		}
	case np.Value == "":
		return errAt(part["partitionname"].Pos, "partition %s: no Nodes", c.Partition)
	default:
		for _, item := range splitTop(np.Value) {
			if set, ok := sets[item]; ok {
				names = append(names, set...)
				continue
			}
			hosts, err := expandHostlist(item)
			if err != nil {
				return errAt(np.Pos, "key Nodes: %v", err)
			}
			names = append(names, hosts...)
		}
	}
	seen := map[string]bool{}
	gpus, cpus := 0, 0
	for _, name := range names {
		i, ok := byName[name]
		if !ok {
			return errAt(np.Pos, "key Nodes: node %q of partition %s has no NodeName line", name, c.Partition)
		}
		if seen[name] || nodes[i].future {
			continue
		}
		seen[name] = true
		c.Nodes++
		gpus += nodes[i].gpus
		cpus += nodes[i].cpus
		if gpus > 1<<30 || cpus > 1<<30 {
			return errAt(np.Pos, "partition %s: more than %d GPUs or CPUs", c.Partition, 1<<30)
		}
	}
	c.Pool, c.Unit = gpus, "gpu"
	if gpus == 0 {
		c.Pool, c.Unit = cpus, "cpu"
	}
	if c.Pool < 1 {
		return errAt(np.Pos, "partition %s: no node that is not FUTURE, so no pool", c.Partition)
	}
	m.apply(np, "pool")
	return nil
}

// readNodes reads the NodeName lines (NodeName=DEFAULT sets the defaults
// of the lines after it).
func (m *mapper) readNodes() ([]node, error) {
	var nodes []node
	defaults := attrs{}
	for _, l := range m.nodes {
		a, _ := m.recordAttrs(l, defaults, nodeKeys, "node attributes other than CPUs, GPUs, features and state do not bear on the pool")
		name := l.Pairs[0]
		if strings.EqualFold(name.Value, "default") {
			delete(a, "nodename")
			defaults = a
			continue
		}
		hosts, err := expandHostlist(name.Value)
		if err != nil {
			return nil, errAt(name.Pos, "key NodeName: %v", err)
		}
		n := node{cpus: 1}
		factor := 1
		for _, k := range []string{"boards", "sockets", "socketsperboard", "corespersocket", "threadspercore"} {
			if p, ok := a.get(k); ok {
				x, err := wholeInt(p.Value)
				if err != nil || x < 1 {
					return nil, errAt(p.Pos, "key %s=%s: want a whole number ≥ 1", p.Key, p.Value)
				}
				if factor *= x; factor > 1<<20 {
					return nil, errAt(p.Pos, "key %s=%s: more than %d CPUs on a node", p.Key, p.Value, 1<<20)
				}
			}
		}
		n.cpus = factor
		if p, ok := a.get("cpus"); ok {
			x, err := wholeInt(p.Value)
			if err != nil || x < 1 || x > 1<<20 {
				return nil, errAt(p.Pos, "key %s=%s: want a whole number of CPUs ≥ 1", p.Key, p.Value)
			}
			n.cpus = x
		}
		if p, ok := a.get("gres"); ok {
			if n.gpus, err = gresGPUs(p.Value); err != nil || n.gpus > 1<<20 {
				return nil, errAt(p.Pos, "key %s=%s: %v", p.Key, p.Value, orTooMany(err))
			}
		}
		for _, k := range []string{"feature", "features"} {
			if p, ok := a.get(k); ok {
				n.features = append(n.features, strings.Split(p.Value, ",")...)
			}
		}
		if p, ok := a.get("state"); ok {
			n.future = strings.EqualFold(p.Value, "future")
		}
		for _, h := range hosts {
			n.name = h
			nodes = append(nodes, n)
		}
		if len(nodes) > maxHosts {
			return nil, errAt(name.Pos, "key NodeName: more than %d nodes", maxHosts)
		}
	}
	return nodes, nil
}

func orTooMany(err error) error {
	if err == nil {
		return fmt.Errorf("more than %d GPUs on a node", 1<<20)
	}
	return err
}

// defaultPartition reads the partitions and returns the default one's
// attributes (Default=YES, else the only one); nil with no partition at
// all (then the file configures no pool).
func (m *mapper) defaultPartition() (attrs, error) {
	defaults := attrs{}
	var parts []attrs
	var chosen attrs
	for _, l := range m.parts {
		a, _ := m.recordAttrs(l, defaults, partKeys, "partition limits, access lists and QOS are not modelled: the log's jobs ran")
		name := l.Pairs[0]
		if strings.EqualFold(name.Value, "default") {
			delete(a, "partitionname")
			defaults = a
			continue
		}
		parts = append(parts, a)
		if p, ok := a.get("default"); ok {
			yes, err := yesNo(p.Value)
			if err != nil {
				return nil, errAt(p.Pos, "key %s: %v", p.Key, err)
			}
			if yes && chosen != nil {
				return nil, errAt(p.Pos, "key %s: partitions %s and %s are both Default=YES", p.Key, chosen["partitionname"].Value, name.Value)
			}
			if yes {
				chosen = a
			}
		}
	}
	switch {
	case len(parts) == 0:
		return nil, errAt(Pos{m.c.File, 0}, "no PartitionName line: the pool is the default partition's nodes")
	case chosen == nil && len(parts) == 1:
		chosen = parts[0]
	case chosen == nil:
		return nil, errAt(parts[1]["partitionname"].Pos, "several partitions and none Default=YES: the model replays one partition, the default")
	}
	c := m.c
	c.Partition = chosen["partitionname"].Value
	for _, a := range parts {
		if p := a["partitionname"]; p.Value != c.Partition {
			m.ignore(p.Pos, "PartitionName="+p.Value, "only the default partition "+c.Partition+" is replayed")
		}
	}
	if p, ok := chosen.get("oversubscribe"); ok && !strings.EqualFold(p.Value, "no") {
		return nil, errAt(p.Pos, "key %s=%s: sharing or whole-node allocation is not modelled (want NO, Slurm's default)", p.Key, p.Value)
	}
	if p, ok := chosen.get("maxtime"); ok {
		t, inf, err := parseTime(p.Value)
		if err != nil {
			return nil, errAt(p.Pos, "key %s: %v", p.Key, err)
		}
		if !inf {
			c.MaxTime = t
		}
		m.ignore(p.Pos, "MaxTime", "read, not enforced: the log's estimates are its time limits")
	}
	for _, k := range []string{"prioritytier", "priorityjobfactor"} {
		if p, ok := chosen.get(k); ok {
			if _, err := strconv.ParseUint(p.Value, 10, 16); err != nil {
				return nil, errAt(p.Pos, "key %s=%s: want a whole number 0 … 65533", p.Key, p.Value)
			}
			m.ignore(p.Pos, p.Key, "one partition is replayed, so its tier and factor order nothing")
		}
	}
	return chosen, nil
}
