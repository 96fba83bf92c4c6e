package hosts

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/bursar-hpc/bursar/platform"
)

// State is a node's state as the placer keeps it (package platform): an up
// node takes work, a draining one runs what it has and takes nothing new,
// a down one runs nothing (docs/hosts.md §3).
type State = platform.State

// The states, as the placer names them.
const (
	Up       = platform.Up
	Draining = platform.Draining
	Down     = platform.Down
)

// Seat is a lease seated on a node, as the drain rule reads it.
type Seat struct {
	Lease int
	// Start is the tick of the lease's grant: the job has run t − Start
	// seconds at tick t.
	Start int
	// Preemptible marks a job of the opportunistic class: requeued off a
	// draining node at any time.
	Preemptible bool
}

// Machine is what Hosts needs of the nodes a policy places on (a placer,
// with the driver's knowledge of each lease's start and class): it sets a
// node's state, and lists the leases seated on a node, in seating order.
// A lease seated on several nodes is listed on each.
type Machine interface {
	SetState(node int, s State)
	Seats(node int, dst []Seat) []Seat
}

// Why a lease is ended by Hosts.
type Why uint8

const (
	// Failed: its node failed; the job stopped at once.
	Failed Why = iota
	// Requeued: its node drains and the rule let it go without a human
	// (an opportunistic job, or one past its minimum runtime under the
	// contract).
	Requeued
	// Operator: its node had drained for the threshold; a human ended it.
	Operator
)

func (w Why) String() string {
	switch w {
	case Failed:
		return "node-failed"
	case Requeued:
		return "drain-requeued"
	case Operator:
		return "ended-by-operator"
	}
	return fmt.Sprintf("why(%d)", uint8(w))
}

// End is a lease Hosts ends at a Step, on node Node, for Why.
type End struct {
	Lease int
	Node  int
	Why   Why
}

// Tally is what the failures and drains of a run cost (docs/hosts.md §4).
type Tally struct {
	Failures     int // hard failures
	Degradations int // degradations (drains begun)
	// Drains are the drains completed (the node emptied), DrainSeconds
	// their total length from degradation to empty.
	Drains       int
	DrainSeconds int64
	// FailedLeases are the leases ended by hard failures.
	FailedLeases int
	// PreemptibleRequeues and ContractRequeues are the leases requeued off
	// draining nodes without a human: opportunistic ones, and ones past
	// their minimum runtime under the contract.
	PreemptibleRequeues int
	ContractRequeues    int
	// Interventions are the leases a human ended on a node that had
	// drained for the threshold: one human intervention each.
	Interventions int
	// HumanRepairs are the repairs that always need a human, whatever the
	// scheduler does: counted apart from Interventions.
	HumanRepairs int
}

// Hosts is the nodes' process and the drain rule over one run.
type Hosts struct {
	cfg   Config
	nodes []node
	// soonest is the earliest next of the nodes up or down (math.MaxInt:
	// none); draining counts the draining nodes.
	soonest  int
	draining int
	tally    Tally
	seats    []Seat
	ends     []End
	scripted bool
}

type node struct {
	state State
	rng   *rand.Rand
	// next is, while up, the tick of its next event (a hard failure if
	// fail, else a degradation); while down, the tick its repair ends.
	next      int
	fail      bool
	drainFrom int // while draining: the tick the drain began
	// plan is a scripted node's events still to come (Scripted), and
	// repairFor the current repair's length.
	plan      []Planned
	repairFor int
	human     bool
}

// Planned is one event of a scripted process (Scripted): node Node fails
// (Fail) or degrades at tick At; its repair takes Repair seconds from the
// failure or from the end of the drain, and needs a human if Human.
type Planned struct {
	Node, At int
	Fail     bool
	Repair   int
	Human    bool
}

// stream is the PCG stream of node 0; node i draws from stream + i.
const stream = 0x4057_5fa1_1ed0_0000

// New is the process of a platform of nodes nodes, every node up at tick
// 0, seeded from seed (the run's seed).
func New(cfg Config, nodes int, seed uint64) (*Hosts, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("hosts: %w", err)
	}
	if nodes < 1 {
		return nil, fmt.Errorf("hosts: %d nodes", nodes)
	}
	h := &Hosts{cfg: cfg, nodes: make([]node, nodes)}
	for i := range h.nodes {
		h.nodes[i].rng = rand.New(rand.NewPCG(seed, stream+uint64(i)))
		h.schedule(i, 0)
	}
	h.resoon()
	return h, nil
}

// Scripted is Hosts whose events are plan's instead of drawn: the worked
// examples of the tests and of a study that wants a given history. cfg's
// rates, repair times and human share are not read. A node's planned
// events must be in order of At, each after the previous one's repair
// ends (a later one is taken at the first tick the node is up for it).
func Scripted(cfg Config, nodes int, plan []Planned) (*Hosts, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("hosts: %w", err)
	}
	if nodes < 1 {
		return nil, fmt.Errorf("hosts: %d nodes", nodes)
	}
	h := &Hosts{cfg: cfg, nodes: make([]node, nodes), scripted: true}
	for k, p := range plan {
		if p.Node < 0 || p.Node >= nodes || p.At < 1 || p.Repair < 1 {
			return nil, fmt.Errorf("hosts: planned event %d: node %d at tick %d, repair %d s: want a node in [0, %d), a tick ≥ 1, a repair ≥ 1 s", k, p.Node, p.At, p.Repair, nodes)
		}
		n := &h.nodes[p.Node]
		if len(n.plan) > 0 && n.plan[len(n.plan)-1].At >= p.At {
			return nil, fmt.Errorf("hosts: planned event %d: node %d's events are not in order of tick", k, p.Node)
		}
		n.plan = append(n.plan, p)
	}
	for i := range h.nodes {
		h.schedule(i, 0)
	}
	h.resoon()
	return h, nil
}

// Config is the process's configuration.
func (h *Hosts) Config() Config { return h.cfg }

// Nodes is the number of nodes.
func (h *Hosts) Nodes() int { return len(h.nodes) }

// Tally is what the run's failures and drains have cost so far.
func (h *Hosts) Tally() Tally { return h.tally }

// State is node i's state.
func (h *Hosts) State(i int) State { return h.nodes[i].state }

// Step applies what happens at tick t, after the policy's Tick t: the
// events due (failures, degradations, repairs ending, in node order), then
// the drain rule on every draining node, which completes a drain whose
// node is left empty (its repair begins). It returns the leases to end at
// t and why (valid until the next Step); the caller ends them at t, which
// is what lets a drain complete. The caller steps every tick at which
// NextAct asks it to, and may step any other.
func (h *Hosts) Step(t int, m Machine) []End {
	h.ends = h.ends[:0]
	if t >= h.soonest {
		for i := range h.nodes {
			for n := &h.nodes[i]; n.state != Draining && n.next <= t; {
				switch {
				case n.state == Down:
					n.state = Up
					m.SetState(i, Up)
					h.schedule(i, n.next)
				case n.fail:
					h.failNode(i, t, m)
				default:
					h.degrade(i, t, m)
				}
			}
		}
		h.resoon()
	}
	if h.draining > 0 {
		for i := range h.nodes {
			if h.nodes[i].state == Draining {
				h.drain(i, t, m)
			}
		}
	}
	return h.ends
}

// NextAct is the first tick after now at which Step acts, given what is
// seated on the nodes now (math.MaxInt: never, unless a job is seated on
// a draining node later, which the rule forbids).
func (h *Hosts) NextAct(now int, m Machine) int {
	next := h.soonest
	if h.draining > 0 {
		for i := range h.nodes {
			n := &h.nodes[i]
			if n.state != Draining {
				continue
			}
			next = min(next, n.drainFrom+int(h.cfg.Threshold))
			h.seats = m.Seats(i, h.seats[:0])
			for _, s := range h.seats {
				switch {
				case s.Preemptible:
					next = now + 1
				case h.cfg.Contract:
					next = min(next, s.Start+int(h.cfg.MinRuntime))
				}
			}
		}
	}
	return max(next, now+1)
}

func (h *Hosts) failNode(i, t int, m Machine) {
	h.tally.Failures++
	h.seats = m.Seats(i, h.seats[:0])
	for _, s := range h.seats {
		if !h.ending(s.Lease) {
			h.ends = append(h.ends, End{Lease: s.Lease, Node: i, Why: Failed})
			h.tally.FailedLeases++
		}
	}
	m.SetState(i, Down)
	h.repair(i, t, h.cfg.FailRepair)
}

func (h *Hosts) degrade(i, t int, m Machine) {
	h.tally.Degradations++
	n := &h.nodes[i]
	n.state, n.drainFrom, n.next = Draining, t, math.MaxInt
	h.draining++
	m.SetState(i, Draining)
}

// drain applies the rule to each job on draining node i at tick t
// (docs/hosts.md §3) and completes the drain if none is left.
func (h *Hosts) drain(i, t int, m Machine) {
	n := &h.nodes[i]
	h.seats = m.Seats(i, h.seats[:0])
	empty := true
	for _, s := range h.seats {
		why := Requeued
		switch {
		case h.ending(s.Lease):
			continue // seated on another node too, and ended there at t
		case s.Preemptible:
			h.tally.PreemptibleRequeues++
		case h.cfg.Contract && t-s.Start >= int(h.cfg.MinRuntime):
			h.tally.ContractRequeues++
		case t-n.drainFrom >= int(h.cfg.Threshold):
			why = Operator
			h.tally.Interventions++
		default:
			empty = false // it still runs
			continue
		}
		h.ends = append(h.ends, End{Lease: s.Lease, Node: i, Why: why})
	}
	if !empty {
		return
	}
	h.tally.Drains++
	h.tally.DrainSeconds += int64(t - n.drainFrom)
	h.draining--
	m.SetState(i, Down)
	h.repair(i, t, h.cfg.DrainRepair)
	if n.next < h.soonest {
		h.soonest = n.next
	}
}

// repair puts node i down at tick t for a lognormal repair time of the
// given mean, and counts it if it needs a human.
func (h *Hosts) repair(i, t int, mean int64) {
	n := &h.nodes[i]
	if h.scripted {
		n.state, n.next = Down, t+n.repairFor
		if n.human {
			h.tally.HumanRepairs++
		}
		return
	}
	s := h.cfg.RepairSigma
	mu := math.Log(float64(mean)) - s*s/2
	d := math.Ceil(math.Exp(mu + s*n.rng.NormFloat64()))
	n.state, n.next = Down, t+int(min(max(d, 1), 10*365*86400))
	if n.rng.Float64() < h.cfg.HumanRepairShare {
		h.tally.HumanRepairs++
	}
}

// schedule draws up node i's next event after tick from: an exponential
// gap at the sum of the two rates, a hard failure with the failure rate's
// share of it.
func (h *Hosts) schedule(i, from int) {
	n := &h.nodes[i]
	if h.scripted {
		n.next = math.MaxInt
		if len(n.plan) > 0 {
			p := n.plan[0]
			n.plan = n.plan[1:]
			n.next, n.fail, n.repairFor, n.human = max(p.At, from+1), p.Fail, p.Repair, p.Human
		}
		return
	}
	total := h.cfg.FailPerNodeDay + h.cfg.DegradePerNodeDay
	if total == 0 {
		n.next = math.MaxInt
		return
	}
	gap := math.Ceil(n.rng.ExpFloat64() / (total / 86400))
	n.fail = n.rng.Float64()*total < h.cfg.FailPerNodeDay
	if gap > 1e15 {
		n.next = math.MaxInt
		return
	}
	n.next = from + int(max(gap, 1))
}

// ending says whether lease is among the leases ended at this Step (one
// seated on several nodes is listed on each).
func (h *Hosts) ending(lease int) bool {
	for _, e := range h.ends {
		if e.Lease == lease {
			return true
		}
	}
	return false
}

func (h *Hosts) resoon() {
	h.soonest = math.MaxInt
	for i := range h.nodes {
		if n := &h.nodes[i]; n.state != Draining {
			h.soonest = min(h.soonest, n.next)
		}
	}
}
