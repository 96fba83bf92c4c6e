package trace

import (
	"bytes"
	"testing"

	"pgregory.net/rapid"

	"github.com/bursar-hpc/bursar/internal/testlong"
	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/policies"
)

// A copy of any policy's state, taken mid-replay and run on with every
// arrival, writes exactly the journal the original writes from that point,
// and taking it changes nothing of the original's: the copy shares no
// state with the original (no pointer, slice, map or cached closure
// aliases it). This is what makes the fair start times' forks sound.
func TestForkContinuesLikeTheOriginal(t *testing.T) {
	testlong.Skip(t, "forks replayed on against the whole run")
	for _, name := range []string{"bursar", "fifo", "priority", "static", "fairshare", "quota", "budget"} {
		t.Run(name, func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				w := randomTrace(t)
				if name == "bursar" {
					w.BucketHours = DefaultBucketHours
				}
				at := rapid.IntRange(0, len(w.Jobs)-1).Draw(t, "fork after job")
				knobs := policies.TraceKnobs()
				knobs.Budget.MinRuntime = [4]int{0, 0, 60, 0}
				var plain, main, fork journal
				replayPolicy(t, w, name, knobs, ReplayOptions{Recorder: &plain, Horizon: 3000})
				forked, mark := false, 0
				opt := ReplayOptions{Recorder: &main, Horizon: 3000, forkHook: func(fs forkState, alloc policy.Allocator, cap *capture) error {
					if forked || fs.next <= at {
						return nil
					}
					forked, mark = true, len(main.buf)
					c, err := CloneAllocator(alloc)
					alloc.SetRecorder(cap)
					if err != nil {
						return err
					}
					return fs.run(c, len(w.Jobs), &fork, nil)
				}}
				replayPolicy(t, w, name, knobs, opt)
				if !bytes.Equal(plain.buf, main.buf) {
					t.Fatalf("taking a copy changed the original's journal")
				}
				if !forked {
					t.Fatalf("no fork after job %d", at)
				}
				if !bytes.Equal(main.buf[mark:], fork.buf) {
					t.Fatalf("after job %d, the original:\n%s\nthe copy:\n%s", at, main.buf[mark:], fork.buf)
				}
			})
		})
	}
}
