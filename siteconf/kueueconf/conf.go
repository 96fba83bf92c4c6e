package kueueconf

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/bursar-hpc/bursar/internal/yamlnode"
)

// Conf is what a site's Kueue manifests say about admission, as policy
// quota reads it.
type Conf struct {
	File string
	// Knobs are quota's knobs the manifests set, by their config keys
	// (every one of them: Kueue's API defaults where the manifests are
	// silent), in the order Knobs lists them.
	Knobs []Knob
	// Resource is the resource the pool counts (nvidia.com/gpu, or cpu
	// where no ClusterQueue covers a GPU resource); Pool its nominal
	// quota summed over the ClusterQueues (every flavor).
	Resource string
	Pool     int
	// Cohort is the ClusterQueues' cohort ("": none, no borrowing).
	Cohort string
	// Queues are the ClusterQueues with their nominal quotas, in file
	// order; LocalQueues the local queues and the ClusterQueue each
	// points at.
	Queues      []Queue
	LocalQueues []LocalQueue
	// Ignored are the fields and documents not read, each once, in file
	// order.
	Ignored []Ignored
}

// Knob is one of quota's knobs as the manifests set it: Value is text,
// a whole number, true/false or a list of text.
type Knob struct {
	Key   string
	Value any
	// From is where it was set ("FILE:LINE: ClusterQueue a
	// spec.preemption.reclaimWithinCohort"), or "Kueue's default".
	From string
}

// Queue is a ClusterQueue.
type Queue struct {
	Name    string
	Nominal int
	Line    int
}

// LocalQueue is a LocalQueue and its ClusterQueue.
type LocalQueue struct {
	Namespace, Name, ClusterQueue string
}

// Ignored is a field or document not read, and why.
type Ignored struct {
	File       string
	Line       int
	Field, Why string
}

func (i Ignored) String() string {
	return fmt.Sprintf("%s:%d: %s (%s)", i.File, i.Line, i.Field, i.Why)
}

// Bounds: a typo should hit them long before it exhausts the machine.
const maxDocuments = 10000

// ParseFile reads the manifests at path.
func ParseFile(path string) (*Conf, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, bytes.NewReader(data))
}

// Parse reads multi-document YAML manifests from r; name is the name
// errors give.
func Parse(name string, r io.Reader) (*Conf, error) {
	p := &parser{c: &Conf{File: name}, ignored: map[string]bool{}, flavors: map[string]bool{}}
	dec := yaml.NewDecoder(r)
	for n := 0; ; n++ {
		var root yaml.Node
		err := dec.Decode(&root)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, yamlError(name, 0, err)
		}
		if n >= maxDocuments {
			return nil, &Error{File: name, Line: root.Line, Msg: fmt.Sprintf("more than %d documents", maxDocuments)}
		}
		if len(root.Content) == 0 {
			continue
		}
		if err := p.document(&doc{file: name}, root.Content[0]); err != nil {
			return nil, err
		}
	}
	if err := p.finish(); err != nil {
		return nil, err
	}
	return p.c, nil
}

// yamlError turns a YAML syntax error into an Error at its line.
func yamlError(file string, offset int, err error) error {
	msg := err.Error()
	line := 0
	if rest, ok := strings.CutPrefix(msg, "yaml: line "); ok {
		num, tail, _ := strings.Cut(rest, ":")
		if l, e := strconv.Atoi(num); e == nil {
			line, msg = l, strings.TrimSpace(tail)
		}
	}
	return &Error{File: file, Line: offset + line, Msg: "YAML: " + strings.TrimPrefix(msg, "yaml: ")}
}

// parser gathers the documents.
type parser struct {
	c       *Conf
	ignored map[string]bool
	flavors map[string]bool
	// usedFlavors are the flavors the ClusterQueues name, where first.
	usedFlavors []flavorUse
	// Per ClusterQueue: its settings, compared across queues in finish.
	queues []queueSettings
	// The Configuration's settings; cfgFrom where it was.
	fairSharing   *setting
	strategies    *setting
	cohorts       []string
	cohortLines   []int
	localQueueRef []flavorUse
}

// setting is a value and where it was read.
type setting struct {
	value any
	from  string
}

type flavorUse struct {
	name string
	line int
}

// queueSettings are one ClusterQueue's settings that quota holds once for
// every queue.
type queueSettings struct {
	name, cohort                      string
	line                              int
	strategy, reclaim, within, borrow setting
	borrowingLimit                    setting // nil value: none
	nominal                           map[string]int
	nominalLine                       int
}

func (p *parser) ignore(d *doc, n *yaml.Node, field, why string) {
	key := strings.TrimSpace(d.kind + " " + field)
	if p.ignored[key] {
		return
	}
	p.ignored[key] = true
	p.c.Ignored = append(p.c.Ignored, Ignored{File: d.file, Line: d.line(n), Field: key, Why: why})
}

// document reads one manifest.
func (p *parser) document(d *doc, root *yaml.Node) error {
	if root.Kind != yaml.MappingNode {
		return d.errAt(root, "", "a manifest is a mapping with apiVersion and kind, got %s", yamlnode.Describe(root))
	}
	var api, kind, name, namespace string
	var spec, meta *yaml.Node
	err := d.fields(root, "", func(key string, k, v *yaml.Node) error {
		var err error
		switch key {
		case "apiVersion":
			api, err = d.text(v, key)
		case "kind":
			kind, err = d.text(v, key)
		case "metadata":
			meta = v
		case "spec":
			spec = v
		}
		return err
	})
	if err != nil {
		return err
	}
	if meta != nil {
		if err := d.fields(meta, "metadata", func(key string, k, v *yaml.Node) error {
			var err error
			switch key {
			case "name":
				name, err = d.text(v, "metadata.name")
			case "namespace":
				namespace, err = d.text(v, "metadata.namespace")
			}
			return err
		}); err != nil {
			return err
		}
	}
	group, _, _ := strings.Cut(api, "/")
	d.kind = kind
	if name != "" {
		d.kind = kind + " " + name
	}
	switch {
	case group == "kueue.x-k8s.io" && kind == "ClusterQueue":
		return p.clusterQueue(d, root, name, spec)
	case group == "kueue.x-k8s.io" && kind == "Cohort":
		return p.cohort(d, root, name, spec)
	case group == "kueue.x-k8s.io" && kind == "LocalQueue":
		return p.localQueue(d, root, namespace, name, spec)
	case group == "kueue.x-k8s.io" && kind == "ResourceFlavor":
		if name == "" {
			return d.errAt(root, "metadata.name", "a ResourceFlavor needs a name")
		}
		p.flavors[name] = true
		if spec != nil {
			p.ignore(d, spec, "spec", "node labels, taints and tolerations: the pool's GPUs are interchangeable")
		}
		return nil
	case group == "kueue.x-k8s.io" && kind == "WorkloadPriorityClass":
		d.kind = "WorkloadPriorityClass"
		p.ignore(d, root, "", "a workload's priority is its job's class, from the log's queues (docs/traces.md)")
		return nil
	case group == "config.kueue.x-k8s.io" && kind == "Configuration":
		return p.configuration(d, root)
	case api == "v1" && kind == "ConfigMap":
		return p.configMap(d, root)
	}
	d.kind = strings.TrimSpace(api + " " + kind)
	p.ignore(d, root, "", "not a Kueue object")
	return nil
}

// configMap reads a Configuration held in a ConfigMap's data (Kueue's
// manifests ship it as controller_manager_config.yaml).
func (p *parser) configMap(d *doc, root *yaml.Node) error {
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value != "data" || root.Content[i+1].Kind != yaml.MappingNode {
			continue
		}
		data := root.Content[i+1]
		for j := 0; j+1 < len(data.Content); j += 2 {
			v := data.Content[j+1]
			if v.Kind != yaml.ScalarNode || !strings.Contains(v.Value, "Configuration") {
				continue
			}
			var inner yaml.Node
			// A block scalar's text starts on the line after its key.
			offset := d.line(v)
			if err := yaml.Unmarshal([]byte(v.Value), &inner); err != nil {
				return yamlError(d.file, offset, err)
			}
			if len(inner.Content) == 0 || inner.Content[0].Kind != yaml.MappingNode {
				continue
			}
			in := &doc{file: d.file, offset: offset}
			if err := p.document(in, inner.Content[0]); err != nil {
				return err
			}
		}
	}
	return nil
}

// configuration reads Kueue's Configuration: fairSharing.
func (p *parser) configuration(d *doc, root *yaml.Node) error {
	d.kind = "Configuration"
	return d.fields(root, "", func(key string, k, v *yaml.Node) error {
		switch key {
		case "apiVersion", "kind", "metadata":
			return nil
		case "fairSharing":
			return d.fields(v, key, func(sub string, sk, sv *yaml.Node) error {
				field := join(key, sub)
				from := fmt.Sprintf("%s:%d: Configuration %s", d.file, d.line(sv), field)
				switch sub {
				case "enable":
					on, err := d.boolean(sv, field)
					if err != nil {
						return err
					}
					p.fairSharing = &setting{on, from}
				case "preemptionStrategies":
					var list []string
					if err := d.items(sv, field, func(i int, item *yaml.Node) error {
						s, err := d.choice(item, fmt.Sprintf("%s[%d]", field, i), "LessThanOrEqualToFinalShare", "LessThanInitialShare")
						list = append(list, s)
						return err
					}); err != nil {
						return err
					}
					p.strategies = &setting{list, from}
				default:
					return d.errAt(sk, field, "not modelled (fairSharing takes enable and preemptionStrategies)")
				}
				return nil
			})
		case "admissionFairSharing":
			return d.errAt(k, key, "admission fair sharing is not modelled")
		}
		p.ignore(d, k, key, "does not bear on admission as the model replays it")
		return nil
	})
}

// cohort reads a Cohort: one cohort, no parent, no quota of its own.
func (p *parser) cohort(d *doc, root *yaml.Node, name string, spec *yaml.Node) error {
	if name == "" {
		return d.errAt(root, "metadata.name", "a Cohort needs a name")
	}
	p.addCohort(name, d.line(root))
	if spec == nil {
		return nil
	}
	return d.fields(spec, "spec", func(key string, k, v *yaml.Node) error {
		switch key {
		case "parent", "parentName":
			return d.errAt(k, "spec."+key, "hierarchical cohorts are not modelled (one cohort, the pool)")
		case "resourceGroups":
			return d.errAt(k, "spec."+key, "a cohort's own quota is not modelled: give the quota to its ClusterQueues")
		case "fairSharing":
			return p.weightOne(d, v, "spec.fairSharing")
		}
		return d.errAt(k, "spec."+key, "not modelled")
	})
}

func (p *parser) addCohort(name string, line int) {
	if !slices.Contains(p.cohorts, name) {
		p.cohorts = append(p.cohorts, name)
		p.cohortLines = append(p.cohortLines, line)
	}
}

// weightOne accepts a fairSharing whose weight is 1 (Kueue's default):
// the model weighs every queue alike.
func (p *parser) weightOne(d *doc, n *yaml.Node, field string) error {
	return d.fields(n, field, func(key string, k, v *yaml.Node) error {
		if key != "weight" {
			return d.errAt(k, join(field, key), "not modelled (fairSharing takes weight)")
		}
		w, err := d.text(v, join(field, key))
		if err != nil {
			return err
		}
		if q, err := quantity(w); err != nil || q != 1 || strings.Contains(w, ".") && w != "1.0" {
			return d.errAt(v, join(field, key), "fair-sharing weights other than 1 are not modelled, got %q", w)
		}
		return nil
	})
}

// localQueue reads a LocalQueue: the ClusterQueue it points at.
func (p *parser) localQueue(d *doc, root *yaml.Node, namespace, name string, spec *yaml.Node) error {
	if spec == nil {
		return d.errAt(root, "spec", "a LocalQueue needs spec.clusterQueue")
	}
	lq := LocalQueue{Namespace: namespace, Name: name}
	err := d.fields(spec, "spec", func(key string, k, v *yaml.Node) error {
		if key != "clusterQueue" {
			p.ignore(d, k, "spec."+key, "does not bear on admission")
			return nil
		}
		var err error
		lq.ClusterQueue, err = d.text(v, "spec.clusterQueue")
		p.localQueueRef = append(p.localQueueRef, flavorUse{lq.ClusterQueue, d.line(v)})
		return err
	})
	if err != nil {
		return err
	}
	if lq.ClusterQueue == "" {
		return d.errAt(spec, "spec.clusterQueue", "missing")
	}
	p.c.LocalQueues = append(p.c.LocalQueues, lq)
	return nil
}
