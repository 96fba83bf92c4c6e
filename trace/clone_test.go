package trace

import (
	"reflect"
	"slices"
	"testing"
	"unsafe"

	"pgregory.net/rapid"

	"github.com/bursar-hpc/bursar/internal/deepcopy"
	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/baseline"
	"github.com/bursar-hpc/bursar/policy/policies"
)

// A copy of any policy's state (CloneAllocator), taken mid-replay, shares
// no memory the original or the copy may change: no pointer target, slice
// array or map of the copy lies in the original's. Only what a Core sets
// once and only ever replaces whole may be shared (its entitlements,
// history and the groups' member lists: baseline.Core.Clone; a rule's
// knobs), strings, and what a copy shares copy on write (static's
// partitions' queues, until either writes them). A rule that copies itself (baseline.RuleCloner)
// makes what internal/deepcopy makes of it, field for field: a field its
// CloneRule forgets fails here.
// TestForkContinuesLikeTheOriginal checks that the copy continues like
// the original; this checks that neither can reach into the other.
func TestCloneSharesNothingMutable(t *testing.T) {
	for _, name := range forkedPolicies {
		t.Run(name, func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				w, at := randomForkTrace(t, name)
				forked := false
				opt := ReplayOptions{Horizon: 3000, forkHook: func(fs forkState, alloc policy.Allocator, cap *capture) error {
					if forked || fs.next <= at {
						return nil
					}
					forked = true
					c, err := CloneAllocator(alloc)
					alloc.SetRecorder(cap)
					if err != nil {
						return err
					}
					if k, ok := alloc.(*baseline.Core); ok {
						if _, own := k.Rule().(baseline.RuleCloner); own {
							want, err := deepcopy.Copy(&struct{ r baseline.Rule }{k.Rule()}, deepcopy.Options{DropFuncs: true, Replace: map[any]any{k: c}})
							if err != nil {
								return err
							}
							if got := c.(*baseline.Core).Rule(); !reflect.DeepEqual(got, want.r) {
								t.Fatalf("CloneRule made\n%+v\ninternal/deepcopy\n%+v", got, want.r)
							}
						}
					}
					orig, cp := memoryOf(alloc), memoryOf(c)
					for _, r := range cp {
						i, _ := slices.BinarySearchFunc(orig, r.lo, func(o span, a uintptr) int {
							switch {
							case o.hi <= a:
								return -1
							case o.lo > a:
								return 1
							}
							return 0
						})
						for ; i < len(orig) && orig[i].lo < r.hi; i++ {
							if orig[i].hi > r.lo {
								t.Fatalf("the copy's %s shares memory with the original's %s", r.what, orig[i].what)
							}
						}
					}
					return nil
				}}
				replayPolicy(t, w, name, policies.TraceKnobs(), opt)
				if !forked {
					t.Fatalf("no fork after job %d", at)
				}
			})
		})
	}
}

type span struct {
	lo, hi uintptr
	what   string
}

// memoryOf lists the memory reachable from a (pointer targets, slices'
// arrays up to their capacity, maps), but for the fields a copy may share
// (see TestCloneSharesNothingMutable), sorted by address.
func memoryOf(a policy.Allocator) []span {
	var out []span
	seen := map[span]bool{}
	shared := map[string]bool{"baseline.Core.ent": true, "baseline.Core.entOf": true, "baseline.Core.history": true, "baseline.Group.Members": true, "budget.Knobs.Groups": true,
		// Shared copy on write (static's clone.go): whichever writes first
		// copies them; TestForksLeaveTheReplayAlone and static's
		// TestLentQueueCopiesOnWrite check that neither writes the other's.
		"static.partQueue.list": true, "static.partQueue.least": true, "static.partQueue.short": true, "static.partQueue.share": true}
	var walk func(v reflect.Value, what string)
	walk = func(v reflect.Value, what string) {
		switch v.Kind() {
		case reflect.Pointer:
			if v.IsNil() || v.Type().Elem().Size() == 0 {
				return
			}
			s := span{v.Pointer(), v.Pointer() + v.Type().Elem().Size(), what}
			if seen[span{lo: s.lo, hi: s.hi}] {
				return
			}
			seen[span{lo: s.lo, hi: s.hi}] = true
			out = append(out, s)
			walk(v.Elem(), what)
		case reflect.Slice:
			if v.IsNil() || v.Cap() == 0 || v.Type().Elem().Size() == 0 {
				return
			}
			full := v.Slice3(0, v.Cap(), v.Cap())
			s := span{v.Pointer(), v.Pointer() + uintptr(v.Cap())*v.Type().Elem().Size(), what}
			if seen[span{lo: s.lo, hi: s.hi}] {
				return
			}
			seen[span{lo: s.lo, hi: s.hi}] = true
			out = append(out, s)
			for i := range full.Len() {
				walk(full.Index(i), what)
			}
		case reflect.Array:
			for i := range v.Len() {
				walk(v.Index(i), what)
			}
		case reflect.Struct:
			if !v.CanAddr() {
				c := reflect.New(v.Type()).Elem()
				c.Set(v)
				v = c
			}
			for i := range v.NumField() {
				f := v.Type().Field(i)
				key := v.Type().String() + "." + f.Name
				if shared[key] {
					continue
				}
				fv := v.Field(i)
				fv = reflect.NewAt(fv.Type(), unsafe.Pointer(fv.UnsafeAddr())).Elem()
				walk(fv, key)
			}
		case reflect.Map:
			if v.IsNil() {
				return
			}
			out = append(out, span{v.Pointer(), v.Pointer() + 1, what})
			it := v.MapRange()
			for it.Next() {
				walk(it.Key(), what)
				walk(it.Value(), what)
			}
		case reflect.Interface:
			if !v.IsNil() {
				e := v.Elem()
				c := reflect.New(e.Type()).Elem()
				c.Set(e)
				walk(c, what)
			}
		}
	}
	walk(reflect.ValueOf(&a).Elem(), "policy")
	slices.SortFunc(out, func(x, y span) int {
		switch {
		case x.lo < y.lo:
			return -1
		case x.lo > y.lo:
			return 1
		}
		return 0
	})
	return out
}
