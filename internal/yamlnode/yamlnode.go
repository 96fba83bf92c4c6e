// Package yamlnode names what a YAML node holds, for the "got …" of the
// configuration readers' type errors (configs, platform, siteconf/kueueconf;
// docs/configs.md), so that each says the same thing of the same mistake.
package yamlnode

import (
	"strconv"

	"gopkg.in/yaml.v3"
)

// Describe names what n holds: "a mapping", "a list", "an alias", a quoted
// string, "nothing (null)", "the boolean true", or a scalar's text.
func Describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	}
	switch n.ShortTag() {
	case "!!str":
		return strconv.Quote(n.Value)
	case "!!null":
		return "nothing (null)"
	case "!!bool":
		return "the boolean " + n.Value
	}
	return n.Value
}
