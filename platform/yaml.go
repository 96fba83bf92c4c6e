package platform

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/bursar-hpc/bursar/internal/yamlnode"
)

// Error is a mistake in a platform's YAML: the file, the line (0 when the
// mistake has none, e.g. an empty file), the field path (platform.nodes,
// platform.partitions[1].name, …) and what is wrong.
type Error struct {
	File  string
	Line  int
	Field string
	Msg   string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		b.WriteString(":" + strconv.Itoa(e.Line))
	}
	if e.Field != "" {
		b.WriteString(": " + e.Field)
	}
	b.WriteString(": " + e.Msg)
	return b.String()
}

// Key is the key a platform has in a file and in a study's config.
const Key = "platform"

var (
	specKeys      = []string{"nodes", "gpus_per_node", "partitions"}
	partitionKeys = []string{"name", "nodes"}
	yamlLine      = regexp.MustCompile(`^(?:yaml: )?line (\d+): `)
)

// Read reads a platform file: one YAML document whose only key is
// `platform:`, holding what FromNode reads (docs/platform.md §1).
func Read(file string, data []byte) (Spec, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return Spec{}, &Error{File: file, Msg: "empty file; want platform: {nodes: N, gpus_per_node: G}"}
		}
		e := &Error{File: file, Msg: err.Error()}
		if m := yamlLine.FindStringSubmatch(e.Msg); m != nil {
			e.Line, _ = strconv.Atoi(m[1])
			e.Msg = e.Msg[len(m[0]):]
		}
		return Spec{}, e
	}
	var next yaml.Node
	if dec.Decode(&next) == nil {
		return Spec{}, &Error{File: file, Line: next.Line, Msg: "a second YAML document starts here; a platform file is one document"}
	}
	r := reader{file: file}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	var spec Spec
	found := false
	err := r.mapping(root, "", []string{Key}, func(_ string, _, v *yaml.Node) error {
		found = true
		var err error
		spec, err = r.spec(v, Key)
		return err
	})
	if err == nil && !found {
		err = r.errAt(root, "", "no platform: key")
	}
	return spec, err
}

// FromNode reads the value of a `platform:` key (a mapping of nodes,
// gpus_per_node and optional partitions) in file; field is its path there.
func FromNode(file string, n *yaml.Node, field string) (Spec, error) {
	r := reader{file: file}
	return r.spec(n, field)
}

type reader struct{ file string }

func (r reader) errAt(n *yaml.Node, field, format string, a ...any) *Error {
	return &Error{File: r.file, Line: n.Line, Field: field, Msg: fmt.Sprintf(format, a...)}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// mapping walks n's keys in document order, refusing anything but a
// mapping of known string keys each given once, and aliases.
func (r reader) mapping(n *yaml.Node, path string, allowed []string, each func(key string, k, v *yaml.Node) error) error {
	if n.Kind != yaml.MappingNode {
		return r.errAt(n, path, "want a mapping (key: value lines), got %s", yamlnode.Describe(n))
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode || k.ShortTag() != "!!str" {
			return r.errAt(k, path, "key %s is not a name", yamlnode.Describe(k))
		}
		for j := 0; j < i; j += 2 {
			if n.Content[j].Value == k.Value {
				return r.errAt(k, join(path, k.Value), "key given twice (first at line %d)", n.Content[j].Line)
			}
		}
		known := false
		for _, a := range allowed {
			known = known || a == k.Value
		}
		if !known {
			return r.errAt(k, join(path, k.Value), "unknown key (want %s)", strings.Join(allowed, ", "))
		}
		if v.Kind == yaml.AliasNode {
			return r.errAt(v, join(path, k.Value), "aliases are not read; write the value")
		}
		if err := each(k.Value, k, v); err != nil {
			return err
		}
	}
	return nil
}

func (r reader) intIn(n *yaml.Node, field string, lo, hi int) (int, error) {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
		return 0, r.errAt(n, field, "want a whole number, got %s", yamlnode.Describe(n))
	}
	x, err := strconv.ParseInt(n.Value, 0, 64)
	if err != nil || x < int64(lo) || x > int64(hi) {
		return 0, r.errAt(n, field, "%s is not in [%d, %d]", n.Value, lo, hi)
	}
	return int(x), nil
}

func (r reader) spec(n *yaml.Node, path string) (Spec, error) {
	var s Spec
	var nodesAt, gpusAt *yaml.Node
	var parts *yaml.Node
	err := r.mapping(n, path, specKeys, func(key string, k, v *yaml.Node) error {
		var err error
		switch key {
		case "nodes":
			nodesAt = k
			s.Nodes, err = r.intIn(v, join(path, key), 1, MaxNodes)
		case "gpus_per_node":
			gpusAt = k
			s.GPUsPerNode, err = r.intIn(v, join(path, key), 1, MaxGPUsPerNode)
		case "partitions":
			parts = v
		}
		return err
	})
	if err != nil {
		return Spec{}, err
	}
	if nodesAt == nil {
		return Spec{}, r.errAt(n, join(path, "nodes"), "missing (the number of nodes)")
	}
	if gpusAt == nil {
		return Spec{}, r.errAt(n, join(path, "gpus_per_node"), "missing (the GPUs of each node)")
	}
	if parts != nil {
		if s.Partitions, err = r.partitions(parts, join(path, "partitions"), s); err != nil {
			return Spec{}, err
		}
	}
	return s, nil
}

func (r reader) partitions(n *yaml.Node, path string, s Spec) ([]Partition, error) {
	if n.Kind != yaml.SequenceNode {
		return nil, r.errAt(n, path, "want a list of {name, nodes}, got %s", yamlnode.Describe(n))
	}
	out := make([]Partition, 0, len(n.Content))
	for i, item := range n.Content {
		field := fmt.Sprintf("%s[%d]", path, i)
		var p Partition
		var nameAt, rangeAt *yaml.Node
		err := r.mapping(item, field, partitionKeys, func(key string, _, v *yaml.Node) error {
			switch key {
			case "name":
				nameAt = v
				if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!str" || v.Value == "" {
					return r.errAt(v, join(field, key), "want a name, got %s", yamlnode.Describe(v))
				}
				p.Name = v.Value
			case "nodes":
				rangeAt = v
				var err error
				p.First, p.Count, err = r.nodeRange(v, join(field, key), s.Nodes)
				return err
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		if nameAt == nil {
			return nil, r.errAt(item, join(field, "name"), "missing")
		}
		if rangeAt == nil {
			return nil, r.errAt(item, join(field, "nodes"), "missing (a node or a range first-last)")
		}
		for _, q := range out {
			if q.Name == p.Name {
				return nil, r.errAt(nameAt, join(field, "name"), "%q given twice", p.Name)
			}
		}
		out = append(out, p)
	}
	return out, nil
}

// nodeRange reads "first-last" or a single node index, within [0, nodes).
func (r reader) nodeRange(n *yaml.Node, field string, nodes int) (first, count int, err error) {
	if n.Kind != yaml.ScalarNode || (n.ShortTag() != "!!str" && n.ShortTag() != "!!int") {
		return 0, 0, r.errAt(n, field, "want a node or a range first-last, got %s", yamlnode.Describe(n))
	}
	lo, hi, ok := strings.Cut(n.Value, "-")
	if !ok {
		hi = lo
	}
	a, errA := strconv.Atoi(strings.TrimSpace(lo))
	b, errB := strconv.Atoi(strings.TrimSpace(hi))
	if errA != nil || errB != nil || a < 0 || b < a {
		return 0, 0, r.errAt(n, field, "%q is not a node or a range first-last (first ≤ last, from 0)", n.Value)
	}
	if b >= nodes {
		return 0, 0, r.errAt(n, field, "%q goes past the last node, %d", n.Value, nodes-1)
	}
	return a, b - a + 1, nil
}
