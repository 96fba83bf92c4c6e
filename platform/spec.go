package platform

import "fmt"

// Spec is a platform: Nodes nodes of GPUsPerNode GPUs each, and optional
// partitions, named ranges of those nodes (docs/platform.md §1).
type Spec struct {
	Nodes       int
	GPUsPerNode int
	Partitions  []Partition
}

// Partition is a named range of nodes: First, First+1, …, First+Count−1.
// Partitions may overlap (a node may serve several, as in Slurm).
type Partition struct {
	Name  string
	First int
	Count int
}

// Limits on a Spec, so that a typo cannot ask for a machine the
// simulator cannot hold in memory.
const (
	MaxNodes       = 1 << 20
	MaxGPUsPerNode = 1 << 10
)

// GPUs is the platform's size: what the pool number would be.
func (s Spec) GPUs() int { return s.Nodes * s.GPUsPerNode }

// IsZero says that no platform was given (the pool is a number).
func (s Spec) IsZero() bool { return s.Nodes == 0 && s.GPUsPerNode == 0 && len(s.Partitions) == 0 }

// Partition finds a partition by name.
func (s Spec) Partition(name string) (Partition, bool) {
	for _, p := range s.Partitions {
		if p.Name == name {
			return p, true
		}
	}
	return Partition{}, false
}

// Validate checks the ranges of docs/platform.md §1; the error names the
// field.
func (s Spec) Validate() error {
	if s.Nodes < 1 || s.Nodes > MaxNodes {
		return fmt.Errorf("nodes: %d is not in [1, %d]", s.Nodes, MaxNodes)
	}
	if s.GPUsPerNode < 1 || s.GPUsPerNode > MaxGPUsPerNode {
		return fmt.Errorf("gpus_per_node: %d is not in [1, %d]", s.GPUsPerNode, MaxGPUsPerNode)
	}
	for i, p := range s.Partitions {
		if err := s.validPartition(i, p); err != nil {
			return err
		}
	}
	return nil
}

func (s Spec) validPartition(i int, p Partition) error {
	if p.Name == "" {
		return fmt.Errorf("partitions[%d].name: empty", i)
	}
	for _, q := range s.Partitions[:i] {
		if q.Name == p.Name {
			return fmt.Errorf("partitions[%d].name: %q given twice", i, p.Name)
		}
	}
	if p.Count < 1 || p.First < 0 || p.First > s.Nodes-p.Count {
		return fmt.Errorf("partitions[%d].nodes: %s is not within nodes 0-%d", i, p.Range(), s.Nodes-1)
	}
	return nil
}

// Range is the partition's nodes as the YAML writes them ("4-7", or "4").
func (p Partition) Range() string {
	if p.Count == 1 {
		return fmt.Sprint(p.First)
	}
	return fmt.Sprintf("%d-%d", p.First, p.First+p.Count-1)
}

// String is the canonical text of a Spec, for cache keys and manifests:
// "16x8", then ";name=first-last" per partition.
func (s Spec) String() string {
	out := fmt.Sprintf("%dx%d", s.Nodes, s.GPUsPerNode)
	for _, p := range s.Partitions {
		out += ";" + p.Name + "=" + p.Range()
	}
	return out
}
