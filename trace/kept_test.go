package trace

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/bursar-hpc/bursar/swf"
)

// Read's table is the log's replayable records of the window, field for
// field, in submit order (ties by job number, else file order), however
// many blocks of kept jobs the log fills and in whatever order its records
// come: built here record by record from the swf reader, the way Read
// reads them, and sorted stably.
func TestReadTableIsTheLogsJobs(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 3*keptBlock+17).Draw(t, "records")
		seed := rapid.Uint64().Draw(t, "seed")
		shuffled := rapid.Float64Range(0, 1).Draw(t, "out of order")
		from := rapid.Int64Range(0, 50).Draw(t, "from")
		rng := rand.New(rand.NewPCG(seed, 1))
		var b bytes.Buffer
		fmt.Fprintf(&b, "; MaxProcs: 64\n; Queue: 0 interactive\n; Queue: 1 batch\n")
		submit := int64(0)
		for range n {
			if rng.Float64() >= shuffled {
				submit += rng.Int64N(3)
			}
			s := submit
			if rng.Float64() < shuffled {
				s = rng.Int64N(submit + 1)
			}
			// Some records not replayable: run ≤ 0, wider than the pool.
			run := rng.Int64N(500) - 20
			fmt.Fprintf(&b, "%d %d %d %d %d -1 -1 %d %d -1 1 %d %d -1 %d -1 -1 -1\n",
				rng.IntN(n)+1, s, rng.Int64N(100)-1, run, rng.IntN(80)+1, rng.IntN(80)-1, rng.Int64N(900)-1,
				rng.IntN(40), rng.IntN(6)-1, rng.IntN(3)-1)
		}
		r, err := swf.NewReader(bytes.NewReader(b.Bytes()), "t.swf")
		if err != nil {
			t.Fatal(err)
		}
		w, err := Read(r, Options{From: from})
		if err != nil {
			t.Skip(err) // no replayable job in the window
		}
		r, err = swf.NewReader(bytes.NewReader(b.Bytes()), "t.swf")
		if err != nil {
			t.Fatal(err)
		}
		var want []Job
		for {
			j, err := r.Next()
			if err != nil {
				break
			}
			if j.Submit < from || swf.Check(&j, 64) != swf.Keep {
				continue
			}
			want = append(want, Job{Number: j.Number, Submit: j.Submit, Run: j.Run, Estimate: j.Estimate(),
				GPUs: j.Procs(), Queue: j.Queue, User: j.User, Group: j.Group, LogWait: j.Wait})
		}
		slices.SortStableFunc(want, func(a, b Job) int {
			if a.Submit != b.Submit {
				return cmpInt(a.Submit, b.Submit)
			}
			return cmpInt(a.Number, b.Number)
		})
		if len(w.Jobs) != len(want) {
			t.Fatalf("%d jobs, want %d", len(w.Jobs), len(want))
		}
		for i := range want {
			got := w.Jobs[i]
			if got.Class != ClassOfQueue(w.QueueName(&got)) {
				t.Fatalf("job %d: class %v, its queue %d's is %v", i, got.Class, got.Queue, ClassOfQueue(w.QueueName(&got)))
			}
			if w.Campaigns[got.Campaign].ID != got.User && w.Campaigns[got.Campaign].ID != got.Group {
				t.Fatalf("job %d: campaign %q, user %d group %d", i, w.Campaigns[got.Campaign].Name, got.User, got.Group)
			}
			got.Class, got.Campaign = 0, 0
			if got != want[i] {
				t.Fatalf("job %d: %+v, want %+v", i, got, want[i])
			}
		}
	})
}
