package kueueconf

import (
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/bursar-hpc/bursar/internal/yamlnode"
)

// Error is a problem at a line of a file, at a field.
type Error struct {
	File  string
	Line  int
	Field string
	Msg   string
}

func (e *Error) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s:%d: key %s: %s", e.File, e.Line, e.Field, e.Msg)
}

// doc is one YAML document being read: the file, the line its text
// starts at less one (a Configuration inside a ConfigMap starts below
// it), its kind and name for messages.
type doc struct {
	file   string
	offset int
	kind   string
}

func (d *doc) errAt(n *yaml.Node, field, format string, a ...any) error {
	line := 0
	if n != nil {
		line = n.Line
	}
	return &Error{File: d.file, Line: d.offset + line, Field: field, Msg: fmt.Sprintf(format, a...)}
}

func (d *doc) line(n *yaml.Node) int { return d.offset + n.Line }

// fields calls each for every key of mapping n in order (field is the
// path for messages), refusing a node that is not a mapping and a key
// given twice.
func (d *doc) fields(n *yaml.Node, field string, each func(key string, k, v *yaml.Node) error) error {
	if n.Kind != yaml.MappingNode {
		return d.errAt(n, field, "want a mapping, got %s", yamlnode.Describe(n))
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if seen[k.Value] {
			return d.errAt(k, join(field, k.Value), "given twice")
		}
		seen[k.Value] = true
		if err := each(k.Value, k, v); err != nil {
			return err
		}
	}
	return nil
}

// items calls each for every item of sequence n.
func (d *doc) items(n *yaml.Node, field string, each func(i int, v *yaml.Node) error) error {
	if n.Kind != yaml.SequenceNode {
		return d.errAt(n, field, "want a list, got %s", yamlnode.Describe(n))
	}
	for i, v := range n.Content {
		if err := each(i, v); err != nil {
			return err
		}
	}
	return nil
}

// text reads a scalar.
func (d *doc) text(n *yaml.Node, field string) (string, error) {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		return "", d.errAt(n, field, "want text, got %s", yamlnode.Describe(n))
	}
	return n.Value, nil
}

// boolean reads true or false.
func (d *doc) boolean(n *yaml.Node, field string) (bool, error) {
	s, err := d.text(n, field)
	if err != nil {
		return false, err
	}
	switch s {
	case "true", "True", "TRUE":
		return true, nil
	case "false", "False", "FALSE":
		return false, nil
	}
	return false, d.errAt(n, field, "want true or false, got %q", s)
}

// choice reads one of allowed.
func (d *doc) choice(n *yaml.Node, field string, allowed ...string) (string, error) {
	s, err := d.text(n, field)
	if err != nil {
		return "", err
	}
	for _, a := range allowed {
		if s == a {
			return s, nil
		}
	}
	return "", d.errAt(n, field, "%q is not supported (want %s)", s, strings.Join(allowed, ", "))
}

func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + "." + b
}
