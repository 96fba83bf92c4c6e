package trace

import (
	"bytes"
	"testing"

	"github.com/bursar-hpc/bursar/platform"
	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/policies"
	"github.com/bursar-hpc/bursar/policy/priority"
)

// watched is a journal that also calls each after every record.
type watched struct {
	journal
	each func(e policy.Event)
}

func (j *watched) Record(e policy.Event) {
	j.journal.Record(e)
	j.each(e)
}

// platformWeek is the excerpt's first week, and the knobs the trace
// studies replay it with.
func platformWeek(t *testing.T, spec *platform.Spec) (*Workload, policies.Knobs) {
	t.Helper()
	w := loadExcerpt(t, Options{From: 21773058, Until: 21773058 + 7*Day, Platform: spec})
	knobs := policies.TraceKnobs()
	knobs.Entitlements = w.Entitlements()
	preempt := w.Preemptible()
	priority.Slot.Edit(&knobs).Preempt = &preempt
	return w, knobs
}

// One node of the pool's GPUs seats exactly what the pool number grants
// (docs/platform.md §2, §4): every policy writes the same journal, byte
// for byte, on it as on the number. The number's path itself is the one
// the goldens and committed results pin.
func TestOneNodeIsThePool(t *testing.T) {
	w, knobs := platformWeek(t, nil)
	one := platform.Spec{Nodes: 1, GPUsPerNode: w.Pool}
	for _, name := range policies.Default.Known() {
		var plain, onNode journal
		replayPolicy(t, w, name, knobs, ReplayOptions{Recorder: &plain})
		replayPolicy(t, w, name, knobs, ReplayOptions{Recorder: &onNode, Platform: one})
		if len(plain.buf) == 0 || !bytes.Equal(plain.buf, onNode.buf) {
			t.Errorf("%s: the journal on one node of %d GPUs differs from the pool's (%d and %d bytes)", name, w.Pool, len(onNode.buf), len(plain.buf))
		}
	}
}

// On 16 nodes × 8 GPUs (the excerpt's 128 processors), every policy
// replays the week with a trace job's processors seated as GPUs on nodes:
// after every journal record no node holds more than its 8 GPUs and every
// granted lease is seated whole.
func TestTraceOnNodes(t *testing.T) {
	spec := &platform.Spec{Nodes: 16, GPUsPerNode: 8}
	w, knobs := platformWeek(t, spec)
	if w.Pool != 128 {
		t.Fatalf("pool %d on 16 × 8", w.Pool)
	}
	for _, name := range policies.Default.Known() {
		a, err := policies.New(name, policy.DefaultConfig(w.Pool), knobs)
		if err != nil {
			t.Fatal(err)
		}
		placed := a.(policy.Placed)
		grants := 0
		j := &watched{each: func(e policy.Event) {
			p := placed.Placer()
			for i := range p.Nodes() {
				if n := p.Node(i); n.Used > p.NodeSize() {
					t.Fatalf("%s: node %d holds %d GPUs", name, i, n.Used)
				}
			}
			if e.Kind == policy.EventGrant {
				grants++
				if s, ok := p.SeatOf(e.Lease); !ok || s.Size() != e.GPUs {
					t.Fatalf("%s: lease %d of %d GPUs seated as %+v", name, e.Lease, e.GPUs, s)
				}
			}
		}}
		r, err := Replay(w, a, ReplayOptions{Recorder: j})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if grants == 0 || r.UnfinishedJobs > len(w.Jobs)/10 {
			t.Errorf("%s on nodes: %d grants, %d of %d jobs unfinished", name, grants, r.UnfinishedJobs, len(w.Jobs))
		}
	}
}

// BenchmarkReplayPolicyExcerptNodes is BenchmarkReplayPolicyExcerpt on 16
// nodes × 8 GPUs (docs/platform.md), the cost of scheduling on nodes.
func BenchmarkReplayPolicyExcerptNodes(b *testing.B) {
	benchPolicies(b, loadExcerpt(b, Options{Platform: &platform.Spec{Nodes: 16, GPUsPerNode: 8}}))
}
