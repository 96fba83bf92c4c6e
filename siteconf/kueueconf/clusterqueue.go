package kueueconf

import (
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"
)

// Kueue's API defaults (kubernetes-sigs/kueue apis/kueue/v1beta1
// clusterqueue_types.go: queueingStrategy BestEffortFIFO,
// reclaimWithinCohort Never, withinClusterQueue Never,
// borrowWithinCohort.policy Never; the Configuration's fairSharing.enable
// false).
const (
	defaultStrategy = "BestEffortFIFO"
	never           = "Never"
)

// clusterQueue reads a ClusterQueue.
func (p *parser) clusterQueue(d *doc, root *yaml.Node, name string, spec *yaml.Node) error {
	if name == "" {
		return d.errAt(root, "metadata.name", "a ClusterQueue needs a name")
	}
	for _, q := range p.queues {
		if q.name == name {
			return d.errAt(root, "metadata.name", "ClusterQueue %s is defined twice (first at line %d)", name, q.line)
		}
	}
	def := fmt.Sprintf("Kueue's default (ClusterQueue %s)", name)
	q := queueSettings{name: name, line: d.line(root), nominal: map[string]int{},
		strategy: setting{defaultStrategy, def}, reclaim: setting{never, def}, within: setting{never, def}, borrow: setting{never, def}}
	from := func(n *yaml.Node, field string) string {
		return fmt.Sprintf("%s:%d: ClusterQueue %s %s", d.file, d.line(n), name, field)
	}
	if spec == nil {
		return d.errAt(root, "spec", "a ClusterQueue needs spec.resourceGroups")
	}
	err := d.fields(spec, "spec", func(key string, k, v *yaml.Node) error {
		field := "spec." + key
		switch key {
		case "cohort", "cohortName":
			c, err := d.text(v, field)
			q.cohort = c
			p.addCohort(c, d.line(v))
			return err
		case "queueingStrategy":
			s, err := d.choice(v, field, "BestEffortFIFO", "StrictFIFO")
			q.strategy = setting{s, from(v, field)}
			return err
		case "resourceGroups":
			return p.resourceGroups(d, v, field, &q, from)
		case "preemption":
			return p.preemption(d, v, field, &q, from)
		case "fairSharing":
			return p.weightOne(d, v, field)
		case "namespaceSelector":
			p.ignore(d, k, field, "which namespaces may submit: the log's users are mapped to queues by docs/site-config.md's rule")
		case "flavorFungibility":
			p.ignore(d, k, field, "the pool's GPUs are interchangeable, so no workload tries another flavor")
		case "admissionChecks", "admissionChecksStrategy":
			p.ignore(d, k, field, "admission checks (provisioning, MultiKueue) are not modelled: every check passes")
		case "stopPolicy":
			p.ignore(d, k, field, "the queue is replayed active")
		default:
			return d.errAt(k, field, "not a ClusterQueue field the model reads (docs/site-config.md)")
		}
		return nil
	})
	if err != nil {
		return err
	}
	if len(q.nominal) == 0 {
		return d.errAt(spec, "spec.resourceGroups", "ClusterQueue %s has no quota", name)
	}
	p.queues = append(p.queues, q)
	return nil
}

// resourceGroups reads the quotas: each flavor's resources' nominal
// quotas and borrowing limits.
func (p *parser) resourceGroups(d *doc, n *yaml.Node, field string, q *queueSettings, from func(*yaml.Node, string) string) error {
	return d.items(n, field, func(i int, g *yaml.Node) error {
		gf := fmt.Sprintf("%s[%d]", field, i)
		return d.fields(g, gf, func(key string, k, v *yaml.Node) error {
			switch key {
			case "coveredResources":
				return d.items(v, join(gf, key), func(int, *yaml.Node) error { return nil })
			case "flavors":
				return d.items(v, join(gf, key), func(j int, fl *yaml.Node) error {
					ff := fmt.Sprintf("%s.flavors[%d]", gf, j)
					return d.fields(fl, ff, func(fk string, fkn, fv *yaml.Node) error {
						switch fk {
						case "name":
							name, err := d.text(fv, join(ff, fk))
							p.usedFlavors = append(p.usedFlavors, flavorUse{name, d.line(fv)})
							return err
						case "resources":
							return p.resources(d, fv, join(ff, fk), q, from)
						}
						return d.errAt(fkn, join(ff, fk), "not a flavor field (name, resources)")
					})
				})
			}
			return d.errAt(k, join(gf, key), "not a resource group field (coveredResources, flavors)")
		})
	})
}

// resources reads one flavor's resources.
func (p *parser) resources(d *doc, n *yaml.Node, field string, q *queueSettings, from func(*yaml.Node, string) string) error {
	return d.items(n, field, func(i int, r *yaml.Node) error {
		rf := fmt.Sprintf("%s[%d]", field, i)
		var name string
		var nominal, limit *yaml.Node
		err := d.fields(r, rf, func(key string, k, v *yaml.Node) error {
			var err error
			switch key {
			case "name":
				name, err = d.text(v, join(rf, key))
			case "nominalQuota":
				nominal = v
			case "borrowingLimit":
				limit = v
			case "lendingLimit":
				return d.errAt(k, join(rf, key), "lending limits are not modelled: a queue lends all its unused quota")
			default:
				return d.errAt(k, join(rf, key), "not a resource field (name, nominalQuota, borrowingLimit)")
			}
			return err
		})
		if err != nil {
			return err
		}
		if name == "" || nominal == nil {
			return d.errAt(r, rf, "a resource needs a name and a nominalQuota")
		}
		s, err := d.text(nominal, join(rf, "nominalQuota"))
		if err != nil {
			return err
		}
		x, err := quantity(s)
		if err != nil {
			return d.errAt(nominal, join(rf, "nominalQuota"), "%q: %v", s, err)
		}
		if q.nominal[name] += x; q.nominal[name] > 1<<30 {
			return d.errAt(nominal, join(rf, "nominalQuota"), "more than %d", 1<<30)
		}
		q.nominalLine = d.line(nominal)
		if limit != nil && isGPU(name) {
			s, err := d.text(limit, join(rf, "borrowingLimit"))
			if err != nil {
				return err
			}
			b, err := quantity(s)
			if err != nil {
				return d.errAt(limit, join(rf, "borrowingLimit"), "%q: %v", s, err)
			}
			if q.borrowingLimit.value != nil {
				return d.errAt(limit, join(rf, "borrowingLimit"), "a borrowing limit on several flavors is not modelled (one pool)")
			}
			q.borrowingLimit = setting{b, from(limit, join(rf, "borrowingLimit"))}
		}
		return nil
	})
}

// isGPU is whether a resource name is a GPU (nvidia.com/gpu,
// amd.com/gpu, gpu).
func isGPU(name string) bool { return strings.HasSuffix(strings.ToLower(name), "gpu") }

// preemption reads spec.preemption.
func (p *parser) preemption(d *doc, n *yaml.Node, field string, q *queueSettings, from func(*yaml.Node, string) string) error {
	return d.fields(n, field, func(key string, k, v *yaml.Node) error {
		f := join(field, key)
		var err error
		var s string
		switch key {
		case "reclaimWithinCohort":
			s, err = d.choice(v, f, "Never", "LowerPriority", "Any")
			q.reclaim = setting{s, from(v, f)}
		case "withinClusterQueue":
			s, err = d.choice(v, f, "Never", "LowerPriority", "LowerOrNewerEqualPriority")
			q.within = setting{s, from(v, f)}
		case "borrowWithinCohort":
			err = d.fields(v, f, func(sub string, sk, sv *yaml.Node) error {
				sf := join(f, sub)
				switch sub {
				case "policy":
					s, err := d.choice(sv, sf, "Never", "LowerPriority")
					q.borrow = setting{s, from(sv, sf)}
					return err
				case "maxPriorityThreshold":
					return d.errAt(sk, sf, "a priority threshold is not modelled")
				}
				return d.errAt(sk, sf, "not a borrowWithinCohort field (policy)")
			})
		default:
			return d.errAt(k, f, "not a preemption field (reclaimWithinCohort, withinClusterQueue, borrowWithinCohort)")
		}
		return err
	})
}
