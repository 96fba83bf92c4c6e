package policy

import (
	"bytes"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// journal is a Recorder that keeps every record, so that a test can check
// both what was decided and how it was written.
type journal struct {
	events []Event
	buf    []byte
}

func (j *journal) Record(e Event) {
	j.events = append(j.events, e)
	j.buf = e.AppendJSON(j.buf)
	j.buf = append(j.buf, '\n')
}

// of returns the records of one kind, in journal order.
func (j *journal) of(k EventKind) []Event {
	var out []Event
	for _, e := range j.events {
		if e.Kind == k {
			out = append(out, e)
		}
	}
	return out
}

// lines is the journal as JSON Lines, one string per record.
func (j *journal) lines() []string {
	var out []string
	for l := range bytes.SplitSeq(bytes.TrimSuffix(j.buf, []byte("\n")), []byte("\n")) {
		if len(l) > 0 {
			out = append(out, string(l))
		}
	}
	return out
}

// reset forgets everything recorded so far, so that a test can look at the
// records of one step only.
func (j *journal) reset() { j.events, j.buf = nil, nil }

// newBroker is a broker on a pool with the model's grace and unmetered
// flows, journaling into the returned journal.
func newBroker(t testing.TB, pool int) (*Broker, *journal) {
	t.Helper()
	return newBrokerCfg(t, DefaultConfig(pool))
}

func newBrokerCfg(t testing.TB, cfg Config) (*Broker, *journal) {
	t.Helper()
	b, err := New(cfg)
	require.NoError(t, err)
	j := &journal{}
	b.SetRecorder(j)
	return b, j
}

// bareBroker is a broker on a pool with the model's defaults and no
// journal, for the tests (rapid's among them) that drive its internals.
func bareBroker(t interface{ Fatal(...any) }, pool int) *Broker {
	b, err := New(DefaultConfig(pool))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// env is an envelope with a generous budget; the numbers that matter to a
// test are given explicitly.
func env(name string, g int, r float64, burst int, bucket float64, cls Class) Envelope {
	return Envelope{Name: name, Budget: 1e9, Guaranteed: g, Sustained: r, BurstCeiling: burst, Bucket: bucket, Class: cls}
}

func mustRegister(t testing.TB, b *Broker, e Envelope) CampaignID {
	t.Helper()
	id, err := b.Register(e)
	require.NoError(t, err)
	return id
}

func mustRequest(t testing.TB, b *Broker, c CampaignID, gpus, duration int, cls Class) int {
	t.Helper()
	id, err := b.Request(c, gpus, duration, cls)
	require.NoError(t, err)
	return id
}

func ticks(b *Broker, n int) {
	for range n {
		b.Tick()
	}
}

// leaseIDs lists the ids of the broker's leases in lease order.
func leaseIDs(b *Broker) []int {
	var ids []int
	for _, l := range b.Leases() {
		ids = append(ids, l.ID)
	}
	return ids
}

func leaseByID(t testing.TB, b *Broker, id int) Lease {
	t.Helper()
	for _, l := range b.Leases() {
		if l.ID == id {
			return l
		}
	}
	t.Fatalf("no lease %d", id)
	return Lease{}
}

// filler is a campaign with no guarantee, whose rate cap never binds, used
// to occupy the pool.
func filler(name string, pool int, cls Class) Envelope {
	return env(name, 0, float64(pool), pool, 1e12, cls)
}

func nan() float64 { return math.NaN() }
func inf() float64 { return math.Inf(1) }

// checkBusy is the busy list's invariant: it lists each campaign once,
// exactly those marked busy, and every campaign off it is at rest (a
// tick's bookkeeping would leave it exactly as it is); and no campaign
// keeps a usage step outside a skip. The moving list lists each
// campaign once, exactly those marked moving, and every campaign off it
// has its buckets at rest (a refill would leave them exactly as they
// are).
func checkBusy(t interface{ Fatalf(string, ...any) }, b *Broker) {
	moving := make([]bool, len(b.camps))
	for i := b.movingHead; i >= 0; i = b.camps[i].movingNext {
		if moving[i] || !b.camps[i].moving {
			t.Fatalf("t=%d: campaign %d twice on the moving list, or not marked moving", b.now, i)
		}
		moving[i] = true
	}
	for i := range b.camps {
		if cp := &b.camps[i]; !moving[i] && (cp.moving || cp.flowBusy || !cp.gpuBucketAtRest()) {
			t.Fatalf("t=%d: campaign %d off the moving list but marked moving (%v), its flows busy (%v) or its bucket not at rest (tokens %v, held %d)",
				b.now, i, cp.moving, cp.flowBusy, cp.tokens, cp.heldAll)
		}
	}
	on := make([]bool, len(b.camps))
	n := 0
	for i := b.busyHead; i >= 0; i = b.camps[i].busyNext {
		if on[i] || !b.camps[i].busy {
			t.Fatalf("t=%d: campaign %d twice on the busy list, or not marked busy", b.now, i)
		}
		on[i] = true
		n++
	}
	if n != b.busyCount {
		t.Fatalf("t=%d: %d campaigns on the busy list, the broker counts %d", b.now, n, b.busyCount)
	}
	for i := range b.camps {
		if cp := &b.camps[i]; !on[i] && (cp.busy || !b.atRest(cp)) {
			t.Fatalf("t=%d: campaign %d off the busy list but marked busy (%v) or not at rest (tokens %v, held %d since %d, io %+v, inference %+v)",
				b.now, i, cp.busy, cp.tokens, cp.heldAll, cp.heldAt, cp.io, cp.inf)
		}
		if cp := &b.camps[i]; !cp.flowBusy && !(cp.io.atRest() && cp.inf.atRest()) {
			t.Fatalf("t=%d: campaign %d's flows are not at rest (io %+v, inference %+v) but not marked busy", b.now, i, cp.io, cp.inf)
		}
		if b.camps[i].usageStep != 0 {
			t.Fatalf("t=%d: campaign %d keeps the usage step %d", b.now, i, b.camps[i].usageStep)
		}
	}
}

// checkRuns is the runs' invariant: the pending list's maximal
// stretches of one campaign and class, none empty, each at its place
// (pos), each request of its run's campaign and class.
func checkRuns(t interface{ Fatalf(string, ...any) }, b *Broker) {
	for i := range b.runs {
		k := &b.runs[i]
		switch {
		case len(b.reqsOf(k)) == 0:
			t.Fatalf("t=%d: run %d is empty", b.now, i)
		case int(k.pos) != i:
			t.Fatalf("t=%d: run %d holds place %d", b.now, i, k.pos)
		case i > 0 && b.runs[i-1].camp == k.camp && b.runs[i-1].class == k.class:
			t.Fatalf("t=%d: runs %d and %d are of one campaign and class", b.now, i-1, i)
		}
		for _, r := range b.reqsOf(k) {
			if int32(r.Campaign) != k.camp || r.Class != k.class {
				t.Fatalf("t=%d: run %d (campaign %d, class %v) holds request %+v", b.now, i, k.camp, k.class, r)
			}
		}
	}
}

// setPending makes list the broker's pending list, run by run, without
// its bookkeeping (the caller keeps it), and returns its runs.
func setPending(b *Broker, list []Request) []pendingKey {
	b.runs, b.runReqs, b.freeSlots, b.runSums = b.runs[:0], nil, nil, nil
	for _, r := range list {
		if n := len(b.runs); n > 0 && b.runs[n-1].class == r.Class && b.runs[n-1].camp == int32(r.Campaign) {
			s := b.runs[n-1].slot
			b.runReqs[s] = append(b.runReqs[s], r)
			continue
		}
		b.runReqs = append(b.runReqs, []Request{r})
		b.runs = append(b.runs, pendingKey{pos: int32(len(b.runs)), class: r.Class, camp: int32(r.Campaign), slot: int32(len(b.runReqs) - 1)})
	}
	return b.runs
}

// listOf is the pending list that runs of b hold, request by request.
func listOf(b *Broker, runs []pendingKey) []Request {
	var list []Request
	for i := range runs {
		list = append(list, b.reqsOf(&runs[i])...)
	}
	return list
}
