package static

import (
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/bursar-hpc/bursar/policy"
)

// TestLentQueueCopiesOnWrite: partition queues that share their arrays
// (lend: a fork's copy and the replay's queue, and copies of copies)
// each go on exactly as a queue of their own would, whatever any of them
// adds, removes, compacts or releases in between: no queue ever writes
// into arrays another still reads. Each shared queue is checked, after
// every step, against a twin that never shared anything.
func TestLentQueueCopiesOnWrite(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		k, err := New(policy.DefaultConfig(64), DefaultKnobs())
		if err != nil {
			t.Fatal(err)
		}
		var first partQueue
		first.build(k)
		queues, twins := []*partQueue{&first}, []*partQueue{{}}
		twins[0].build(k)
		next := 0
		for step := range rapid.IntRange(1, 80).Draw(t, "steps") {
			x := rapid.IntRange(0, len(queues)-1).Draw(t, "queue")
			q, tw := queues[x], twins[x]
			switch rapid.IntRange(0, 5).Draw(t, "op") {
			case 0, 1: // a job joins
				e := waiting{submitted: next / 2, id: next, gpus: rapid.IntRange(1, 64).Draw(t, "gpus"), est: rapid.IntRange(1, 1e4).Draw(t, "est"), rigid: true}
				if len(q.list) > 0 && rapid.IntRange(0, 4).Draw(t, "requeued") == 0 {
					e.submitted = q.list[rapid.IntRange(0, len(q.list)-1).Draw(t, "behind")].submitted
				}
				next++
				q.add(k, e)
				tw.add(k, e)
			case 2: // a job leaves
				if len(q.list) == 0 {
					continue
				}
				e := q.list[rapid.IntRange(0, len(q.list)-1).Draw(t, "leaves")]
				q.remove(k, e.submitted, e.id)
				tw.remove(k, e.submitted, e.id)
				q.compact(k)
				tw.compact(k)
			case 3, 4: // a copy of it, sharing its arrays
				c := q.lend()
				queues = append(queues, &c)
				tc := *tw
				tc.list, tc.least, tc.short = slices.Clone(tw.list), slices.Clone(tw.least), slices.Clone(tw.short)
				twins = append(twins, &tc)
			case 5: // a copy done with
				if x == 0 {
					continue
				}
				q.release()
				queues, twins = slices.Delete(queues, x, x+1), slices.Delete(twins, x, x+1)
			}
			for i, q := range queues {
				tw := twins[i]
				if !slices.Equal(q.list, tw.list) || !slices.Equal(q.least, tw.least) || !slices.Equal(q.short, tw.short) ||
					q.first != tw.first || q.live != tw.live || q.dead != tw.dead || q.unit != tw.unit {
					t.Fatalf("step %d: queue %d of %d is not its twin:\n%+v\n%+v", step, i, len(queues), *q, *tw)
				}
			}
		}
		// Once every copy is released, the first queue writes in place.
		for len(queues) > 1 {
			queues[1].release()
			queues = slices.Delete(queues, 1, 2)
		}
		if first.share != nil && first.share.others != 0 {
			t.Fatalf("every copy released, the queue still counts %d others", first.share.others)
		}
	})
}
