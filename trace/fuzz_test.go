package trace

import (
	"bytes"
	"os"
	"testing"

	"github.com/bursar-hpc/bursar/swf"
)

// FuzzRead: any input either is refused with an error or becomes a workload
// that replays feasibly. It never panics and never hangs.
func FuzzRead(f *testing.F) {
	raw, err := os.ReadFile(excerpt)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(raw[:6000], uint8(0), false)
	f.Add([]byte("; MaxProcs: 8\n1 0 5 100 4 -1 -1 4 200 -1 1 1 1 -1 0 -1 -1 -1\n2 0 5 9000000000000 4 -1 -1 4 200 -1 1 1 1 -1 0 -1 -1 -1\n"), uint8(4), true)
	f.Fuzz(func(t *testing.T, b []byte, pool uint8, byGroup bool) {
		r, err := swf.NewReader(bytes.NewReader(b), "fuzz.swf")
		if err != nil {
			return
		}
		w, err := Read(r, Options{Pool: int(pool), ByGroup: byGroup})
		if err != nil || len(w.Jobs) > 300 {
			return
		}
		start := ReplayEASY(w)
		checkFeasible(t, w, start)
		Summarize(w, start)
	})
}
