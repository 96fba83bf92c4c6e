package policy

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"pgregory.net/rapid"

	"github.com/bursar-hpc/bursar/internal/deepcopy"
)

// cloneTwins drives a broker through random operations (drawSkipOp's, on
// drawEnvelope's campaigns: budgets that run out, flows, guarantees),
// skipping where NextChange allows, and hands it to at at a random
// operation; at returns a second broker that is given the same
// operations from then on, and check compares the two after each (its
// false return ends the run: the twins part ways). The second broker is
// recycled at the end (Broker.Recycle), so that later runs' copies are
// made in blocks a copy used before.
func cloneTwins(t *rapid.T, refusals *int, at func(b *Broker) *Broker, check func(a, b *Broker, aj, bj *journal, after string, ea, eb error) bool) {
	cfg := drawConfig(t, []int{64, 512, 16, 128}, true)
	pool := cfg.Pool
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var aj, bj journal
	a.SetRecorder(&aj)
	for i := range rapid.IntRange(1, 5).Draw(t, "campaigns") {
		a.Register(drawEnvelope(t, fmt.Sprintf("c%d", i), pool/2, false)) // an overbooking one is refused
	}
	if a.NumCampaigns() == 0 {
		return
	}
	var b *Broker
	defer func() {
		if b != nil {
			b.Recycle() // its rings go to the next run's copy
		}
	}()
	split := rapid.IntRange(0, 60).Draw(t, "split")
	late := 0
	refused := 0
	defer func() { *refusals += refused }()
	for k := range rapid.IntRange(20, 120).Draw(t, "op-count") {
		if k == split {
			b = at(a)
			b.SetRecorder(&bj)
			aj.reset()
		}
		o := drawSkipOp(t)
		c := CampaignID(o.c % a.NumCampaigns())
		// The twin goes first: a request it cannot tell
		// (ErrBooksNotKept) is filed with neither, as a fork's driver
		// files none after its first tick.
		refusedOp := false
		each := func(f func(x *Broker) (int, error)) (ea, eb error) {
			if b != nil {
				if _, eb = f(b); errors.Is(eb, ErrBooksNotKept) {
					refusedOp = true
					return nil, nil
				}
			}
			_, ea = f(a)
			return ea, eb
		}
		var ea, eb error
		switch o.kind {
		case skipRequest:
			ea, eb = each(func(x *Broker) (int, error) { return x.Request(c, o.gpus, o.dur, o.class) })
		case skipRigid:
			sub := a.now
			if o.next {
				sub++
			}
			ea, eb = each(func(x *Broker) (int, error) { return x.RequestRigid(c, o.gpus, o.dur, o.run, o.class, sub) })
		case skipReleaseAll:
			ea, eb = each(func(x *Broker) (int, error) { return 0, x.ReleaseAll(c, o.class) })
		case skipReleaseLease:
			if n := len(a.leases); n > 0 {
				l := a.leases[o.n%n]
				ea, eb = each(func(x *Broker) (int, error) { return 0, x.ReleaseLease(l.Campaign, l.ID) })
			}
		case skipConsume:
			ea, eb = each(func(x *Broker) (int, error) { _, _, err := x.Consume(c, o.io, o.inf); return 0, err })
		case skipWait:
			each(func(x *Broker) (int, error) {
				target := x.now + o.n
				for x.now < target {
					if to := min(x.NextChange()-1, target); to > x.now {
						x.SkipTo(to)
						continue
					}
					x.Tick()
				}
				return 0, nil
			})
		case skipRegister:
			late++
			e := drawEnvelope(t, fmt.Sprintf("late%d", late), pool, false)
			ea, eb = each(func(x *Broker) (int, error) { _, err := x.Register(e); return 0, err })
		}
		if b == nil {
			continue
		}
		if refusedOp {
			refused++
			continue
		}
		if !check(a, b, &aj, &bj, fmt.Sprintf("op %+v", o), ea, eb) {
			return
		}
	}
}

// A broker's own copy (Clone) is what internal/deepcopy makes of it,
// field for field, but for SkipTo's list of flow buckets (scratch holding
// pointers into the campaigns, emptied before it is read); and the copy,
// given the same operations, writes the same journal and reaches the
// same state. Forgetting a slice in Clone fails TestCloneSharesNothingMutable
// (trace); copying one wrongly, or leaving out a field, fails here.
func TestCloneMatchesDeepCopy(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var refused int
		cloneTwins(t, &refused, func(a *Broker) *Broker {
			rec := a.rec
			a.SetRecorder(nil)
			c, err := a.Clone()
			if err != nil {
				t.Fatal(err)
			}
			want, err := deepcopy.Copy(a, deepcopy.Options{})
			if err != nil {
				t.Fatal(err)
			}
			a.SetRecorder(rec)
			want.skipFlows = nil
			got := c.(*Broker)
			sharesNothing(t, a, got)
			// The copy's ring block is its own (Recycle's).
			rings := got.rings
			got.rings, want.rings = nil, nil
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("Clone made\n%+v\ninternal/deepcopy\n%+v", got, want)
			}
			got.rings = rings
			return c.(*Broker)
		}, func(a, b *Broker, aj, bj *journal, after string, ea, eb error) bool {
			if !sameErr(ea, eb) {
				t.Fatalf("after %s: errors %v and %v", after, ea, eb)
			}
			if !bytes.Equal(aj.buf, bj.buf) {
				t.Fatalf("after %s: journals\n%s\n%s", after, aj.buf, bj.buf)
			}
			ra, rb := a.rec, b.rec
			a.rec, b.rec = nil, nil
			a.skipFlows, b.skipFlows = nil, nil
			rings := b.rings
			b.rings = a.rings
			same := reflect.DeepEqual(a, b)
			a.rec, b.rec, b.rings = ra, rb, rings
			if !same {
				t.Fatalf("after %s: the copy's state differs\n%+v\n%+v", after, a, b)
			}
			return true
		})
	})
}

// A copy that keeps no books (GrantsOnly) grants, releases, throttles,
// notices and denies exactly as the broker with its books kept: the same
// journal, leases, pending list, buckets, usage windows and deficits
// after every operation, budgets that run out included, up to the first
// request it cannot tell (ErrBooksNotKept), where the broker with its
// books denied it for its budget or would have been at risk of doing so.
func TestGrantsOnlyGrantsAsTheBooks(t *testing.T) {
	refused := 0
	rapid.Check(t, func(t *rapid.T) {
		cloneTwins(t, &refused, func(a *Broker) *Broker {
			rec := a.rec
			a.SetRecorder(nil)
			c, err := a.Clone()
			a.SetRecorder(rec)
			if err != nil {
				t.Fatal(err)
			}
			b := c.(*Broker)
			if !b.GrantsOnly(b.now + rapid.IntRange(0, 50000).Draw(t, "until")) {
				t.Fatal("GrantsOnly refused")
			}
			return b
		}, func(a, b *Broker, aj, bj *journal, after string, ea, eb error) bool {
			if !sameErr(ea, eb) {
				t.Fatalf("after %s: errors %v and %v", after, ea, eb)
			}
			if !bytes.Equal(aj.buf, bj.buf) {
				x, y := aj.lines(), bj.lines()
				for i := range min(len(x), len(y)) {
					if x[i] != y[i] {
						t.Fatalf("after %s: journal line %d:\n books kept %s\n grants only %s", after, i+1, x[i], y[i])
					}
				}
				t.Fatalf("after %s: journals of %d and %d lines", after, len(x), len(y))
			}
			if a.now != b.now || a.Free() != b.Free() || a.NextChange() != b.NextChange() {
				t.Fatalf("after %s: clocks %d/%d, free %d/%d, next change %d/%d", after, a.now, b.now, a.Free(), b.Free(), a.NextChange(), b.NextChange())
			}
			for c := range a.NumCampaigns() {
				id := CampaignID(c)
				if a.Tokens(id) != b.Tokens(id) || a.FairDeficit(id) != b.FairDeficit(id) || a.camps[c].usage.buf != b.camps[c].usage.buf {
					t.Fatalf("after %s: campaign %d: tokens %v/%v deficit %v/%v", after, c, a.Tokens(id), b.Tokens(id), a.FairDeficit(id), b.FairDeficit(id))
				}
				for _, d := range []Dimension{IO, Inference} {
					if a.FlowTokens(id, d) != b.FlowTokens(id, d) {
						t.Fatalf("after %s: campaign %d %v: tokens %v/%v", after, c, d, a.FlowTokens(id, d), b.FlowTokens(id, d))
					}
				}
				if b.Credits(id) < a.Credits(id) && !sameFloat(a.Credits(id), b.Credits(id)) {
					t.Fatalf("after %s: campaign %d: credits kept %v below the books' %v", after, c, b.Credits(id), a.Credits(id))
				}
			}
			if !reflect.DeepEqual(uncharged(a.Leases()), uncharged(b.Leases())) || !reflect.DeepEqual(a.Pending(), b.Pending()) {
				t.Fatalf("after %s: leases or pending lists differ\n%+v %+v\n%+v %+v", after, a.Leases(), b.Leases(), a.Pending(), b.Pending())
			}
			checkThrottleFloors(t, b)
			checkBusy(t, b)
			checkRuns(t, b)
			return true
		})
	})
	t.Logf("%d requests refused (ErrBooksNotKept)", refused)
}

// sharesNothing fails if copy c of broker a holds a slice array (its
// whole room) or a pointer target of a's: a slice field of the broker, a
// campaign's usage ring or flow envelope.
func sharesNothing(t *rapid.T, a, c *Broker) {
	va, vc := reflect.ValueOf(a).Elem(), reflect.ValueOf(c).Elem()
	for i := range va.NumField() {
		fa, fc := va.Field(i), vc.Field(i)
		if fa.Kind() == reflect.Slice && fa.Cap() > 0 && fc.Cap() > 0 && fa.Pointer() == fc.Pointer() {
			t.Fatalf("the copy's %s shares the original's array", va.Type().Field(i).Name)
		}
	}
	for i := range a.camps {
		x, y := &a.camps[i], &c.camps[i]
		if x.usage == y.usage || x.env.IO != nil && x.env.IO == y.env.IO || x.env.Inference != nil && x.env.Inference == y.env.Inference {
			t.Fatalf("the copy's campaign %d shares its usage ring or a flow envelope", i)
		}
	}
}

// uncharged is leases without their cached charges, which a broker
// that keeps no books does not work out.
func uncharged(leases []Lease) []Lease {
	out := make([]Lease, len(leases))
	for i, l := range leases {
		l.charge, l.chargeM = 0, 0
		out[i] = l
	}
	return out
}

func sameErr(a, b error) bool {
	return (a == nil) == (b == nil) && (a == nil || a.Error() == b.Error())
}
