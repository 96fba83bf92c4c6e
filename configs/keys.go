package configs

import (
	"slices"

	"github.com/bursar-hpc/bursar/engine"
)

// KeySet is one kind of YAML mapping the parsers read and every key it
// accepts. Section is the heading of docs/configs.md whose tables
// document those keys; a test holds the page to this list.
type KeySet struct {
	Section string
	Keys    []string
}

// KeySets are the keys of experiment configs, study configs and scenario
// files, built from the same lists the parsers check keys against, so
// that a key added to a parser shows up here without further ado.
func KeySets() []KeySet {
	var knobs []string
	for i := range engine.Knobs {
		knobs = append(knobs, engine.Knobs[i].Name)
	}
	policyKeys := []string{"name"}
	p := &parser{}
	for _, k := range p.allPolicyKnobKeys() {
		if !slices.Contains(policyKeys, k) {
			policyKeys = append(policyKeys, k)
		}
	}
	study := slices.Clone(studyCommonKeys)
	for _, name := range StudyExperiments {
		for _, k := range studyKeys[name] {
			if !slices.Contains(study, k) {
				study = append(study, k)
			}
		}
	}
	var campaign []string
	for _, agent := range engine.AgentKinds {
		for _, k := range campaignKeys(agent) {
			if !slices.Contains(campaign, k) {
				campaign = append(campaign, k)
			}
		}
	}
	sets := []KeySet{
		{"Experiment configs", topKeys},
		{"A series", seriesKeys},
		{"Lists: seeds and grid axes", axisKeys},
		{"bootstrap", bootstrapKeys},
		{"The scenario knobs", knobs},
		{"policy", policyKeys},
	}
	for _, d := range p.registry().Descriptors() {
		for _, m := range d.Knobs.Mappings {
			sets = append(sets, KeySet{m.Section, m.Keys})
		}
	}
	return append(sets, []KeySet{
		{"Study configs", study},
		{"A study window", studyWindowKeys},
		{"Scenario files", scenarioTopKeys},
		{"A scenario's campaign", campaign},
		{"A window", windowKeys},
		{"A flow envelope", flowKeys},
	}...)
}
