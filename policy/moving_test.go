package policy

import (
	"testing"
)

// By hand: the moving list (refill's) holds the campaigns whose buckets
// a refill may move. Campaign a (R = 8, B = 100) holds nothing, its
// bucket full: the first refill leaves it at 100 and takes it off the
// list, though its usage window keeps it busy. A grant of 16 GPUs (for
// 10 s: a rate cap of 8 + 100/10) puts it back (markBusy), and its bucket drains by 8 a tick from the next
// refill: 92, 84. Released, it refills by 8 a tick to 100, where the
// refill after the one that reaches it takes it off again. A draw on its
// io flow puts it back until both flows are at rest: two refills, the
// first showing the draw as the last tick's use.
//
// Mutations caught: refill taking a campaign off while its flows are
// busy, or while its bucket moved (also by checkBusy's moving-list
// invariant in the property and skip tests); markBusy not putting it
// back (the bucket then stays at 100 with 16 GPUs held).
func TestMovingListByHand(t *testing.T) {
	b, _ := New(DefaultConfig(64))
	e := env("a", 0, 8, 64, 100, AgentBurst)
	e.IO = &Flow{Rate: 1, Ceiling: 2, Bucket: 10}
	a := mustRegister(t, b, e)
	step := func(what string, tokens float64, moving bool) {
		t.Helper()
		b.Tick()
		checkBusy(t, b)
		if got := b.Tokens(a); got != tokens || b.camps[a].moving != moving {
			t.Fatalf("t=%d %s: tokens %v, moving %v; want %v, %v", b.now, what, got, b.camps[a].moving, tokens, moving)
		}
	}
	step("full, holding nothing", 100, false)
	if !b.camps[a].busy {
		t.Fatal("off the busy list with its usage window sliding")
	}
	if _, err := b.Request(a, 16, 10, AgentBurst); err != nil {
		t.Fatal(err)
	}
	step("granted 16", 100, true) // granted after the refill
	step("holding 16", 92, true)
	step("holding 16", 84, true)
	if err := b.ReleaseAll(a, AnyClass); err != nil {
		t.Fatal(err)
	}
	step("released", 92, true)
	step("released", 100, true)
	step("full again", 100, false)
	step("at rest", 100, false)
	if io := b.ConsumeIO(a, 2); io != 2 {
		t.Fatalf("io allowed %v, want 2", io)
	}
	if !b.camps[a].moving {
		t.Fatal("a draw on a flow left the campaign off the moving list")
	}
	step("io drawn", 100, true) // io 10 + 1 − 2 = 9, the draw its last use
	if got := b.FlowTokens(a, IO); got != 9 {
		t.Fatalf("io tokens %v, want 9", got)
	}
	step("io full", 100, false) // 9 + 1: both flows at rest
	if got := b.FlowTokens(a, IO); got != 10 {
		t.Fatalf("io tokens %v, want 10", got)
	}
}
