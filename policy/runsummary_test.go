package policy

import (
	"fmt"
	"math"
	"testing"

	"pgregory.net/rapid"
)

// checkRunSums: every run's summary that says it holds counts its
// requests as they are (summarize: its narrowest and how many ask for
// it, and as many fresh or waiting as it has requests that are not
// journaled trace jobs), and no fewer fresh than it has requests that
// are not trace jobs.
func checkRunSums(t *rapid.T, b *Broker) {
	for i := range b.runs {
		k := &b.runs[i]
		got := *b.sumOf(k.slot)
		if !got.ok {
			continue
		}
		var want runSummary
		summarize(&want, b.reqsOf(k))
		elastic := int32(0)
		for _, r := range b.reqsOf(k) {
			if !r.rigid {
				elastic++
			}
		}
		if got.narrowest != want.narrowest || got.atNarrowest != want.atNarrowest || got.fresh+got.waiting != want.fresh || got.fresh < elastic || got.elastic != elastic {
			t.Fatalf("t=%d: run %d (campaign %d) summary %+v, its requests give %+v (%d not trace jobs)", b.now, i, k.camp, got, want, elastic)
		}
	}
}

// Admission passes a run by unread only where trying it would do nothing
// (runInert): random trace jobs and other requests, wide and narrow,
// filed, withdrawn, released and granted over random waits (ticked,
// skipped, or an admission between ticks), with opportunistic leases to
// reclaim, give the very journal, pending list and leases as a broker
// that reads every run at every pass (its summaries dropped before each
// step, so none holds). The valid summaries are their runs' after every
// step.
func TestRunSummariesChangeNothing(t *testing.T) {
	inert := 0
	rapid.Check(t, func(t *rapid.T) {
		pool := rapid.SampledFrom([]int{16, 64, 128}).Draw(t, "pool")
		cfg := DefaultConfig(pool)
		cfg.GrantTimeOnly = rapid.IntRange(0, 5).Draw(t, "grant-time-only") == 0
		var bs [2]*Broker
		var js [2]*journal
		for k := range bs {
			b, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			js[k] = &journal{}
			b.SetRecorder(js[k])
			b.CountWork(true)
			bs[k] = b
		}
		nc := rapid.IntRange(1, 5).Draw(t, "campaigns")
		for i := range nc {
			g := 0
			if rapid.IntRange(0, 4).Draw(t, "guaranteed?") == 0 {
				g = rapid.IntRange(1, pool/nc).Draw(t, "g")
			}
			r := math.Ldexp(rapid.Float64Range(1, 2).Draw(t, "R-mantissa"), rapid.IntRange(-3, 4).Draw(t, "R-exp"))
			e := Envelope{Name: fmt.Sprintf("c%d", i), Budget: 1e9, Guaranteed: g, Sustained: r + float64(g),
				BurstCeiling: rapid.IntRange(max(g, 1), pool).Draw(t, "burst"),
				Bucket:       rapid.SampledFrom([]float64{0, 50, 3000, 40000, 1e6}).Draw(t, "B"),
				Class:        rapid.SampledFrom([]Class{Interactive, AgentBurst, Opportunistic}).Draw(t, "env-class")}
			for _, b := range bs {
				if _, err := b.Register(e); err != nil {
					t.Fatal(err)
				}
			}
		}
		for range rapid.IntRange(20, 150).Draw(t, "op-count") {
			c := CampaignID(rapid.IntRange(0, nc-1).Draw(t, "campaign"))
			op := rapid.IntRange(0, 12).Draw(t, "op")
			// The draws, once for both brokers.
			gpus := rapid.IntRange(1, pool).Draw(t, "gpus")
			run := rapid.IntRange(1, 3000).Draw(t, "run")
			est := run + rapid.SampledFrom([]int{0, 10, 2000}).Draw(t, "over")
			cls := rapid.SampledFrom([]Class{AnyClass, Interactive, Opportunistic}).Draw(t, "class")
			pick := rapid.IntRange(0, 1<<20).Draw(t, "pick")
			waits := rapid.SampledFrom([]int{1, 2, 60, 900}).Draw(t, "waits")
			for k, b := range bs {
				if k == 1 {
					b.runSums = nil // the plain broker: no run is passed by
				}
				switch op {
				case 0, 1, 2, 3, 10, 11, 12:
					_, _ = b.RequestRigid(c, gpus, est, run, cls, b.now+1)
				case 4:
					_, _ = b.Request(c, gpus, est, AnyClass)
				case 5:
					if pend := b.Pending(); len(pend) > 0 {
						r := pend[pick%len(pend)]
						if _, ok, err := b.Withdraw(r.Campaign, r.ID); !ok || err != nil {
							t.Fatalf("withdrawing pending request %d: %v, %v", r.ID, ok, err)
						}
					}
				case 6:
					if n := len(b.leases); n > 0 {
						l := b.leases[pick%n]
						_ = b.ReleaseLease(l.Campaign, l.ID)
					}
				case 7:
					b.Admit()
				default:
					for range waits {
						if next := b.NextChange(); next > b.now+2 && op == 8 {
							b.SkipTo(min(next-1, b.now+5000))
						} else {
							b.Tick()
						}
					}
				}
				checkRunSums(t, b)
			}
			if string(js[0].buf) != string(js[1].buf) {
				t.Fatalf("t=%d: the journals differ:\n%s\n---\n%s", bs[0].now, js[0].buf, js[1].buf)
			}
			if a, p := fmt.Sprint(bs[0].Pending(), bs[0].leases), fmt.Sprint(bs[1].Pending(), bs[1].leases); a != p {
				t.Fatalf("t=%d: pending lists or leases differ:\n%s\n%s", bs[0].now, a, p)
			}
		}
		// Runs passed by are read, not walked: the broker that passes
		// some by walked fewer requests.
		if w0, w1 := bs[0].Work(), bs[1].Work(); w0.Walked < w1.Walked {
			inert++
		}
	})
	t.Logf("%d cases passed some run by", inert)
	// The test can only fail on a run passed by if some are.
	if inert == 0 {
		t.Fatal("no run was ever passed by")
	}
}
