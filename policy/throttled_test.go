package policy

import (
	"fmt"
	"math"
	"testing"

	"pgregory.net/rapid"
)

// checkThrottleFloors is the throttle floors' invariant (throttled.go):
// each campaign's tries is the number of its pending requests that are
// not trace jobs or not yet journaled throttled; a valid floor is the
// smallest throttleFloor of its pending trace jobs at its held GPUs now;
// and a quiet campaign's requests would each do nothing if tried: every
// one a trace job, journaled, and below its rate cap.
func checkThrottleFloors(t interface{ Fatalf(string, ...any) }, b *Broker) {
	n := len(b.camps)
	tries := make([]int, n)
	floor := make([]float64, n)
	for c := range floor {
		floor[c] = math.Inf(1)
	}
	pend := b.Pending()
	for i := range pend {
		r := &pend[i]
		cp := &b.camps[r.Campaign]
		if !r.rigid || !r.throttleJournaled {
			tries[r.Campaign]++
		}
		if r.rigid {
			floor[r.Campaign] = min(floor[r.Campaign], throttleFloor(cp, r.GPUs, r.Duration))
		}
	}
	rigid := 0
	for i := range pend {
		if pend[i].rigid {
			rigid++
		}
	}
	if rigid != b.rigidPending {
		t.Fatalf("t=%d: %d trace jobs pending, the broker counts %d", b.now, rigid, b.rigidPending)
	}
	for c := range b.camps {
		cp := &b.camps[c]
		if cp.tries != tries[c] {
			t.Fatalf("t=%d: campaign %d counts %d requests to try, its pending list %d", b.now, c, cp.tries, tries[c])
		}
		if cp.floorOK && cp.floor != floor[c] {
			t.Fatalf("t=%d: campaign %d's floor %v, its pending trace jobs' %v", b.now, c, cp.floor, floor[c])
		}
	}
	for i := range pend {
		r := &pend[i]
		cp := &b.camps[r.Campaign]
		if !b.quietCampaign(cp) {
			continue
		}
		if !r.rigid || !r.throttleJournaled || b.rateCap(cp, r.Duration)-cp.heldAll >= r.GPUs {
			t.Fatalf("t=%d: campaign %d is quiet (tokens %v, floor %v, held %d) but its request %+v would be tried",
				b.now, r.Campaign, cp.tokens, cp.floor, cp.heldAll, *r)
		}
	}
}

// The floors follow their requests: random trace jobs and other requests
// filed, withdrawn, released, granted and throttled over random waits
// (ticked, skipped, or an admission between ticks), on trace-like
// envelopes (no guarantee, a small rate, a deep bucket) and on some with
// guarantees. After every operation the invariant holds, and after a
// refresh every campaign with pending requests has its floor (while any
// trace job is pending: with none, no floor is read or kept).
func TestThrottleFloorsFollowTheirRequests(t *testing.T) {
	quiet := 0
	rapid.Check(t, func(t *rapid.T) {
		pool := rapid.SampledFrom([]int{16, 64, 128}).Draw(t, "pool")
		cfg := DefaultConfig(pool)
		cfg.GrantTimeOnly = rapid.IntRange(0, 5).Draw(t, "grant-time-only") == 0
		b, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		nc := rapid.IntRange(1, 6).Draw(t, "campaigns")
		for i := range nc {
			g := 0
			if rapid.IntRange(0, 3).Draw(t, "guaranteed?") == 0 {
				g = rapid.IntRange(1, pool/nc).Draw(t, "g")
			}
			r := math.Ldexp(rapid.Float64Range(1, 2).Draw(t, "R-mantissa"), rapid.IntRange(-3, 2).Draw(t, "R-exp"))
			e := Envelope{Name: fmt.Sprintf("c%d", i), Budget: 1e9, Guaranteed: g, Sustained: r + float64(g),
				BurstCeiling: rapid.IntRange(max(g, 1), pool).Draw(t, "burst"),
				Bucket:       rapid.SampledFrom([]float64{0, 50, 3000, 40000, 1e6}).Draw(t, "B"), Class: AgentBurst}
			if _, err := b.Register(e); err != nil {
				t.Fatal(err)
			}
		}
		for range rapid.IntRange(10, 80).Draw(t, "op-count") {
			c := CampaignID(rapid.IntRange(0, nc-1).Draw(t, "campaign"))
			switch op := rapid.IntRange(0, 9).Draw(t, "op"); op {
			case 0, 1, 2:
				gpus := rapid.IntRange(1, pool).Draw(t, "gpus")
				run := rapid.IntRange(1, 3000).Draw(t, "run")
				est := run + rapid.SampledFrom([]int{0, 10, 2000}).Draw(t, "over")
				cls := rapid.SampledFrom([]Class{AnyClass, Interactive, Opportunistic}).Draw(t, "class")
				_, _ = b.RequestRigid(c, gpus, est, run, cls, b.now+1)
			case 3:
				_, _ = b.Request(c, rapid.IntRange(1, pool).Draw(t, "gpus"), rapid.IntRange(0, 3000).Draw(t, "duration"), AnyClass)
			case 4:
				if pend := b.Pending(); len(pend) > 0 {
					r := pend[rapid.IntRange(0, len(pend)-1).Draw(t, "withdrawn")]
					if _, ok, err := b.Withdraw(r.Campaign, r.ID); !ok || err != nil {
						t.Fatalf("withdrawing pending request %d: %v, %v", r.ID, ok, err)
					}
				}
			case 5:
				_ = b.ReleaseAll(c, rapid.SampledFrom(anyOrClass).Draw(t, "class"))
			case 6:
				if n := len(b.leases); n > 0 {
					l := b.leases[rapid.IntRange(0, n-1).Draw(t, "lease")]
					_ = b.ReleaseLease(l.Campaign, l.ID)
				}
			case 7:
				b.Admit()
			default:
				for range rapid.SampledFrom([]int{1, 2, 60, 900}).Draw(t, "waits") {
					if next := b.NextChange(); next > b.now+2 && op == 8 {
						b.SkipTo(min(next-1, b.now+5000))
					} else {
						b.Tick()
					}
					checkThrottleFloors(t, b)
				}
			}
			checkThrottleFloors(t, b)
			for i := range b.camps {
				if b.quietCampaign(&b.camps[i]) {
					quiet++
				}
			}
			b.refreshFloors(b.runsOf())
			checkThrottleFloors(t, b)
			for _, r := range b.Pending() {
				if cp := &b.camps[r.Campaign]; !cp.floorOK && !cfg.GrantTimeOnly && b.rigidPending > 0 {
					t.Fatalf("t=%d: campaign %d has pending requests and no floor after a refresh", b.now, r.Campaign)
				}
			}
		}
	})
	t.Logf("%d quiet campaigns seen", quiet)
	// The test can only fail on a quiet campaign if some are quiet.
	if quiet == 0 {
		t.Fatalf("no campaign was ever quiet")
	}
}

// A floor by hand. Pool 64; c0 with R = 0.5 and a bucket of 400
// GPU-seconds asks, holding nothing, for 4 GPUs estimated at 100 s: its
// prepaid cap is ⌊0.5 + T/100⌋, which reaches 4 at T = 350, so its floor
// is 350 less capMargin's 1e-12 × ((4 + 0.5) × 100 + 400 + 1) ≈ 8.5e-10.
// It starts with a full bucket, so its first try grants the job; a second
// job of 4 GPUs for 100 s, filed while c0 holds the first 4 GPUs, needs
// K = 8: floor (8 − 0.5) × 100 − margin ≈ 750, above the bucket: throttled
// and journaled at its first try, then quiet (no rising fill reaches the
// floor; the bucket's top of 400 is below it), and once a tick has
// passed without a change NextChange is the first job's end.
func TestThrottleFloorByHand(t *testing.T) {
	b, j := newBroker(t, 64)
	c := mustRegister(t, b, Envelope{Name: "c0", Budget: 1e9, Sustained: 0.5, BurstCeiling: 64, Bucket: 400, Class: AgentBurst})
	cp := &b.camps[c]
	if _, err := b.RequestRigid(c, 4, 100, 100, AnyClass, 1); err != nil {
		t.Fatal(err)
	}
	if want := 350 - 1e-12*(4.5*100+401); math.Abs(throttleFloor(cp, 4, 100)-want) > 1e-13 {
		t.Fatalf("floor %v, want %v", throttleFloor(cp, 4, 100), want)
	}
	b.Tick()
	if len(j.of(EventGrant)) != 1 || cp.heldAll != 4 {
		t.Fatalf("the first job was not granted: held %d", cp.heldAll)
	}
	if _, err := b.RequestRigid(c, 4, 100, 100, AnyClass, b.now+1); err != nil {
		t.Fatal(err)
	}
	if b.quietCampaign(cp) {
		t.Fatalf("quiet before the new job's first try")
	}
	b.Tick()
	if len(j.of(EventThrottle)) != 1 {
		t.Fatalf("the second job was not throttled at its first try: %v", j.lines())
	}
	b.Tick() // the throttle record was a change: the next tick is a real one
	if next := b.NextChange(); next != 101 {
		t.Fatalf("NextChange %d, want the first job's end at 101", next)
	}
	if want := 750 - 1e-12*(8.5*100+401); !cp.floorOK || math.Abs(cp.floor-want) > 1e-12 {
		t.Fatalf("floor %v (valid %v), want %v", cp.floor, cp.floorOK, want)
	}
	if !b.quietCampaign(cp) {
		t.Fatalf("not quiet with %v tokens below the floor %v", cp.tokens, cp.floor)
	}
	checkThrottleFloors(t, b)
}
