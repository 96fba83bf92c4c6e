package hosts

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// job is a test job: seated on a node at start, it ends by itself at end
// unless Hosts ends it first.
type job struct {
	node, start, end int
	preemptible      bool
}

// world is a Machine with a scheduler that seats arriving jobs on up nodes
// only (what a placer does) and ends them at their own ends.
type world struct {
	rack
	jobs    []job
	arrive  []int // each job's arrival tick
	running []bool
	log     []string
}

func (w *world) seat(t int) error {
	for k, at := range w.arrive {
		if at != t {
			continue
		}
		for off := range len(w.state) {
			i := (w.jobs[k].node + off) % len(w.state)
			if w.state[i] == Up {
				w.jobs[k].node, w.jobs[k].start = i, t
				w.jobs[k].end += t
				w.seats[i] = append(w.seats[i], Seat{Lease: k, Start: t, Preemptible: w.jobs[k].preemptible})
				w.running[k] = true
				break
			}
		}
	}
	return nil
}

func (w *world) finish(t int) {
	for k := range w.jobs {
		if w.running[k] && w.jobs[k].end == t {
			w.running[k] = false
			w.vacate(k)
		}
	}
}

func (w *world) apply(t int, ends []End) {
	for _, e := range ends {
		w.running[e.Lease] = false
		w.log = append(w.log, fmt.Sprintf("%d: lease %d node %d %v", t, e.Lease, e.Node, e.Why))
	}
	w.end(ends)
}

// nextOwn is the world's next arrival or end after now.
func (w *world) nextOwn(now int) int {
	next := math.MaxInt
	for k, at := range w.arrive {
		if at > now {
			next = min(next, at)
		}
		if w.running[k] && w.jobs[k].end > now {
			next = min(next, w.jobs[k].end)
		}
	}
	return next
}

// Stepping only at the ticks NextAct asks for (and the world's own) gives
// the same ends at the same ticks and the same tally as stepping every
// tick; at every step no job runs on a down node, a draining node took no
// job after its drain began, every drain ends within the threshold, and
// the placer's states are Hosts'.
func TestSkippingIsExactAndNoJobOnADownNode(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		nodes := rapid.IntRange(1, 5).Draw(rt, "nodes")
		cfg := Config{
			FailPerNodeDay:    rapid.Float64Range(0, 80).Draw(rt, "fail"),
			DegradePerNodeDay: rapid.Float64Range(0, 80).Draw(rt, "degrade"),
			FailRepair:        int64(rapid.IntRange(1, 3000).Draw(rt, "fail_repair")),
			DrainRepair:       int64(rapid.IntRange(1, 3000).Draw(rt, "drain_repair")),
			RepairSigma:       rapid.Float64Range(0, 2).Draw(rt, "sigma"),
			HumanRepairShare:  rapid.Float64Range(0, 1).Draw(rt, "human"),
			Contract:          rapid.Bool().Draw(rt, "contract"),
			MinRuntime:        int64(rapid.IntRange(0, 4000).Draw(rt, "m")),
			Threshold:         int64(rapid.IntRange(1, 6000).Draw(rt, "threshold")),
		}
		seed := rapid.Uint64().Draw(rt, "seed")
		const horizon = 20000
		n := rapid.IntRange(0, 40).Draw(rt, "jobs")
		proto := make([]job, n)
		arrive := make([]int, n)
		for k := range proto {
			arrive[k] = rapid.IntRange(1, horizon).Draw(rt, "arrive")
			proto[k] = job{node: rapid.IntRange(0, nodes-1).Draw(rt, "node"), end: rapid.IntRange(1, 8000).Draw(rt, "run"),
				preemptible: rapid.IntRange(0, 3).Draw(rt, "class") == 0}
		}
		run := func(every bool) (*world, Tally) {
			h, err := New(cfg, nodes, seed)
			if err != nil {
				rt.Fatal(err)
			}
			w := &world{rack: *newRack(nodes), jobs: slices.Clone(proto), arrive: arrive, running: make([]bool, n)}
			began := make([]int, nodes) // when each node's drain began
			for t := 1; t <= horizon; {
				w.finish(t) // the policy's Tick t: leases end, then new ones are seated
				if err := w.seat(t); err != nil {
					rt.Fatal(err)
				}
				w.apply(t, h.Step(t, w))
				for i := range nodes {
					if w.state[i] != h.State(i) {
						rt.Fatalf("tick %d: node %d placer %v, hosts %v", t, i, w.state[i], h.State(i))
					}
					if w.state[i] == Down && len(w.seats[i]) > 0 {
						rt.Fatalf("tick %d: jobs %v on down node %d", t, w.seats[i], i)
					}
					if w.state[i] != Draining {
						began[i] = -1
					} else if began[i] < 0 {
						began[i] = t
					}
					for _, s := range w.seats[i] {
						if w.state[i] == Draining && s.Start > began[i] {
							rt.Fatalf("tick %d: lease %d seated at %d on node %d draining since %d", t, s.Lease, s.Start, i, began[i])
						}
					}
					if w.state[i] == Draining && t-began[i] > int(cfg.Threshold) {
						rt.Fatalf("tick %d: node %d has drained since %d, past the threshold %d", t, i, began[i], cfg.Threshold)
					}
				}
				if every {
					t++
				} else {
					t = min(h.NextAct(t, w), w.nextOwn(t))
				}
			}
			return w, h.Tally()
		}
		wa, ta := run(true)
		wb, tb := run(false)
		if ta != tb || !slices.Equal(wa.log, wb.log) {
			rt.Fatalf("every tick: %+v\n%v\nskipping: %+v\n%v", ta, wa.log, tb, wb.log)
		}
		if ta.DrainSeconds > int64(ta.Drains)*cfg.Threshold {
			rt.Fatalf("drains of %d s in all, %d drains, threshold %d", ta.DrainSeconds, ta.Drains, cfg.Threshold)
		}
	})
}

// Each node draws from its own stream: node 0's history is the same on a
// platform of 1 node and of 8, under the same seed.
func TestEachNodeItsOwnStream(t *testing.T) {
	cfg := Default()
	cfg.FailPerNodeDay, cfg.DegradePerNodeDay = 2, 2
	history := func(nodes int) []string {
		h, err := New(cfg, nodes, 42)
		if err != nil {
			t.Fatal(err)
		}
		r := newRack(nodes)
		var out []string
		prev := Up
		for tick := h.NextAct(0, r); tick < 100*86400; tick = h.NextAct(tick, r) {
			h.Step(tick, r)
			if s := h.State(0); s != prev {
				out, prev = append(out, fmt.Sprint(tick, s)), s
			}
		}
		return out
	}
	one, eight := history(1), history(8)
	if len(one) < 100 || !slices.Equal(one, eight) {
		t.Fatalf("node 0 alone: %d changes; among 8: %d; first %v / %v", len(one), len(eight), one[:min(6, len(one))], eight[:min(6, len(eight))])
	}
}
