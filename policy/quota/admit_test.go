package quota

import (
	"fmt"
	"reflect"
	"testing"

	"pgregory.net/rapid"

	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/baseline"
	bt "github.com/bursar-hpc/bursar/policy/baseline/baselinetest"
)

// plainRule is the rule with the plain admission pass Admit replaces:
// each round finds the heads by a pass over the whole pending list, sorts
// them by insertion reading the requests themselves, and looks every head
// up by id.
type plainRule struct{ *Rule }

func (p plainRule) Admit(k *baseline.Core) {
	r := p.Rule
	n := k.NumCampaigns()
	r.blocked = baseline.Flags(r.blocked, n)
	total, _ := r.cohort(k)
	for {
		pend := k.Pending()
		best := make([]int, n)
		for c := range best {
			best[c] = -1
		}
		for i := range pend {
			q := &pend[i]
			c := q.Campaign
			if k.Campaign(c).Filler || r.blocked[c] {
				continue
			}
			if b := best[c]; b < 0 || q.Class < pend[b].Class || q.Class == pend[b].Class && q.Submitted < pend[b].Submitted {
				best[c] = i
			}
		}
		var heads []int
		for c := range n {
			i := best[c]
			if i < 0 {
				continue
			}
			req := k.Pend(i)
			want := max(k.Want(i), 0)
			req.Key = float64(max(0, k.Held(req.Campaign, policy.AnyClass)+want-k.Floored(req.Campaign))) / float64(max(total, 1))
			heads = append(heads, req.ID)
		}
		if len(heads) == 0 {
			return
		}
		for a := 1; a < len(heads); a++ {
			for b := a; b > 0 && plainLess(k.Pend(k.Index(heads[b])), k.Pend(k.Index(heads[b-1]))); b-- {
				heads[b], heads[b-1] = heads[b-1], heads[b]
			}
		}
		admitted := false
		for _, id := range heads {
			i := k.Index(id)
			c := k.Pend(i).Campaign
			if k.TryStart(i, r.roomBeyondReservation(k, i)) {
				admitted = true
				continue
			}
			r.blocked[c] = true
			r.reclaim(k, i)
		}
		if !admitted {
			return
		}
	}
}

func plainLess(x, y *baseline.Request) bool {
	if bx, by := x.Key > 0, y.Key > 0; bx != by {
		return by
	}
	if x.Key != y.Key {
		return x.Key < y.Key
	}
	if x.Class != y.Class {
		return x.Class < y.Class
	}
	if x.Submitted != y.Submitted {
		return x.Submitted < y.Submitted
	}
	return x.ID < y.ID
}

// Admit decides exactly as the plain pass on random casts (a filler or
// not, borrowing limits) and random mixes of agent requests, trace jobs
// (some submitted at the next tick), releases and ticks: the same journal
// and the same pending list and lease table after every operation.
func TestAdmitIsThePlainPass(t *testing.T) {
	classes := []policy.Class{policy.AnyClass, policy.Deadline, policy.Interactive, policy.AgentBurst, policy.Opportunistic}
	rapid.Check(t, func(t *rapid.T) {
		pool := rapid.SampledFrom([]int{8, 16, 64}).Draw(t, "pool")
		knobs := Knobs{BorrowingLimit: rapid.SampledFrom([]int{Unlimited, 0, 4}).Draw(t, "borrowing-limit")}
		cfg := bt.Config(pool, rapid.IntRange(0, 5).Draw(t, "grace"))
		fast, err := New(cfg, knobs)
		if err != nil {
			t.Fatal(err)
		}
		plain, err := baseline.New(cfg, plainRule{&Rule{knobs: knobs}})
		if err != nil {
			t.Fatal(err)
		}
		jf, jp := &bt.Journal{}, &bt.Journal{}
		fast.SetRecorder(jf)
		plain.SetRecorder(jp)
		// 70: campaigns past the first word of Rule.active.
		n := rapid.SampledFrom([]int{1, 2, 3, 4, 6, 70}).Draw(t, "campaigns")
		for i := range n {
			cls := rapid.SampledFrom([]policy.Class{policy.Interactive, policy.AgentBurst, policy.AgentBurst, policy.Opportunistic}).Draw(t, "class")
			env := bt.Env(fmt.Sprintf("c%d", i), float64(rapid.IntRange(0, 4).Draw(t, "R")), cls)
			_, e1 := fast.Register(env)
			_, e2 := plain.Register(env)
			if (e1 == nil) != (e2 == nil) {
				t.Fatalf("register: %v, plain %v", e1, e2)
			}
		}
		for step := range rapid.IntRange(0, 80).Draw(t, "ops") {
			c := policy.CampaignID(rapid.IntRange(0, n-1).Draw(t, "c"))
			cls := rapid.SampledFrom(classes).Draw(t, "req-class")
			switch rapid.IntRange(0, 5).Draw(t, "op") {
			case 0, 1:
				gpus, d := rapid.IntRange(1, pool).Draw(t, "gpus"), rapid.IntRange(0, 40).Draw(t, "duration")
				_, e1 := fast.Request(c, gpus, d, cls)
				_, e2 := plain.Request(c, gpus, d, cls)
				if (e1 == nil) != (e2 == nil) {
					t.Fatalf("request: %v, plain %v", e1, e2)
				}
			case 2:
				gpus, run := rapid.IntRange(1, pool).Draw(t, "gpus"), rapid.IntRange(1, 30).Draw(t, "run")
				est, at := run+rapid.IntRange(0, 10).Draw(t, "slack"), fast.Now()+rapid.IntRange(0, 1).Draw(t, "next")
				_, e1 := fast.RequestRigid(c, gpus, est, run, cls, at)
				_, e2 := plain.RequestRigid(c, gpus, est, run, cls, at)
				if (e1 == nil) != (e2 == nil) {
					t.Fatalf("rigid request: %v, plain %v", e1, e2)
				}
			case 3:
				_ = fast.ReleaseAll(c, cls)
				_ = plain.ReleaseAll(c, cls)
			default:
				for range rapid.IntRange(1, 5).Draw(t, "ticks") {
					fast.Tick()
					plain.Tick()
				}
			}
			if string(jf.Bytes) != string(jp.Bytes) {
				t.Fatalf("step %d: journals differ:\n%s\nplain:\n%s", step, jf.Bytes, jp.Bytes)
			}
			if !reflect.DeepEqual(fast.Pending(), plain.Pending()) || !reflect.DeepEqual(fast.Leases(), plain.Leases()) {
				t.Fatalf("step %d: state differs:\n%+v\n%+v\nplain:\n%+v\n%+v", step, fast.Pending(), fast.Leases(), plain.Pending(), plain.Leases())
			}
		}
	})
}
