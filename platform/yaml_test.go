package platform

import (
	"regexp"
	"strings"
	"testing"
)

func TestReadSpec(t *testing.T) {
	text := "platform:\n  partitions:\n    - {name: a, nodes: 0-7}\n    - name: b\n      nodes: 8\n  nodes: 16\n  gpus_per_node: 8\n"
	s, err := Read("p.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if s.String() != "16x8;a=0-7;b=8" || s.GPUs() != 128 {
		t.Fatalf("read %s (%d GPUs), want 16x8;a=0-7;b=8 (128)", s, s.GPUs())
	}
}

// Each mistake names the file, the line and the field.
func TestReadErrors(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		{"", "p.yaml: empty file"},
		{"platform: {nodes: 16}\n", "p.yaml:1: platform.gpus_per_node: missing"},
		{"platform:\n  nodes: 0\n  gpus_per_node: 8\n", "p.yaml:2: platform.nodes: 0 is not in [1, 1048576]"},
		{"platform:\n  nodes: 4\n  gpus_per_node: eight\n", "p.yaml:3: platform.gpus_per_node: want a whole number, got \"eight\""},
		{"platform:\n  nodes: 4\n  gpu_per_node: 8\n", "p.yaml:3: platform.gpu_per_node: unknown key"},
		{"platform:\n  nodes: 4\n  gpus_per_node: 8\n  partitions:\n    - {name: a, nodes: 2-4}\n", "p.yaml:5: platform.partitions[0].nodes: \"2-4\" goes past the last node, 3"},
		{"platform:\n  nodes: 4\n  gpus_per_node: 8\n  partitions:\n    - {name: a, nodes: 0}\n    - {name: a, nodes: 1}\n", "p.yaml:6: platform.partitions[1].name: \"a\" given twice"},
		{"platform:\n  nodes: 4\n  gpus_per_node: 8\n  partitions:\n    - {nodes: 3-1, name: a}\n", "p.yaml:5: platform.partitions[0].nodes: \"3-1\" is not a node or a range"},
		{"platform:\n  nodes: 4\n  nodes: 5\n", "p.yaml:3: platform.nodes: key given twice (first at line 2)"},
		{"nodes: 4\n", "p.yaml:1: nodes: unknown key (want platform)"},
		{"platform: [1\n", "p.yaml:1: did not find expected"},
		{"platform: {nodes: 1, gpus_per_node: 1}\n---\nx: 1\n", "p.yaml:2: a second YAML document"},
	} {
		_, err := Read("p.yaml", []byte(c.text))
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%q: got %v, want %s…", c.text, err, c.want)
		}
	}
}

var errAtFile = regexp.MustCompile(`^p\.yaml(:\d+)?: `)

// FuzzRead: any input gives a valid Spec or an error naming the file; never
// a panic, and a Spec read is one New accepts.
func FuzzRead(f *testing.F) {
	f.Add("platform: {nodes: 16, gpus_per_node: 8}\n")
	f.Add("platform:\n  nodes: 4\n  gpus_per_node: 8\n  partitions:\n    - {name: a, nodes: 0-1}\n    - {name: b, nodes: 3}\n")
	f.Add("platform: &x {nodes: 1}\nother: *x\n")
	f.Fuzz(func(t *testing.T, text string) {
		s, err := Read("p.yaml", []byte(text))
		if err != nil {
			if !errAtFile.MatchString(err.Error()) {
				t.Fatalf("error without the file: %v", err)
			}
			return
		}
		if err := s.Validate(); err != nil {
			t.Fatalf("read an invalid spec %s: %v", s, err)
		}
		p := New(s)
		if !p.Fits(s.GPUs()) || p.Fits(s.GPUs()+1) {
			t.Fatalf("an empty %s does not seat exactly its %d GPUs", s, s.GPUs())
		}
	})
}
