package configs

import (
	"embed"
	"fmt"
	"strings"
)

// The paper's experiments, one YAML file each, compiled into the binary so
// that bursar-sweep reproduces the paper without any file beside it.
//
//go:embed *.yaml
var embedded embed.FS

// Experiments are the paper's experiments in the order `paper` runs them
// and prints them.
var Experiments = []string{"latency-price", "overbooking", "bucket"}

// DefaultFile is the name errors give for an embedded config: its path in
// the repository, so that a message points at the file to edit.
func DefaultFile(experiment string) string { return "configs/" + experiment + ".yaml" }

// DefaultSource returns the embedded YAML of a paper experiment.
func DefaultSource(experiment string) ([]byte, error) {
	data, err := embedded.ReadFile(experiment + ".yaml")
	if err != nil {
		return nil, fmt.Errorf("no embedded config for experiment %q (have %s)", experiment, strings.Join(Experiments, ", "))
	}
	return data, nil
}

// Default parses the embedded config of a paper experiment.
func Default(experiment string) (*Config, error) { return Reader{}.Default(experiment) }

// Default: see the package's Default.
func (r Reader) Default(experiment string) (*Config, error) {
	data, err := DefaultSource(experiment)
	if err != nil {
		return nil, err
	}
	return r.Parse(DefaultFile(experiment), data)
}
