package trace_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bursar-hpc/bursar/trace"
)

// A copy of a record (a fork's) and its original abort on from the same
// runs and each reads only its own: the original grows its arrays in
// place (here with room to spare after four aborts), the copy's first
// abort copies them, and neither writes over the other's.
func TestAbortedRunsOfACopyAreItsOwn(t *testing.T) {
	var r trace.JobRecord
	for k := range int64(3) {
		r.Abort(10+k, k)
	}
	fork := r // a fork copies the records by value
	r.Abort(100, 7)
	fork.Abort(200, 8)
	r.Abort(101, 9)
	forkOfFork := fork
	fork.Abort(201, 0)
	forkOfFork.Abort(300, 1)
	require.Equal(t, []int64{10, 11, 12, 100, 101}, r.Aborted())
	require.Equal(t, []int64{0, 1, 2, 7, 9}, r.Kept())
	require.Equal(t, []int64{10, 11, 12, 200, 201}, fork.Aborted())
	require.Equal(t, []int64{0, 1, 2, 8, 0}, fork.Kept())
	require.Equal(t, []int64{10, 11, 12, 200, 300}, forkOfFork.Aborted())
	require.Equal(t, []int64{0, 1, 2, 8, 1}, forkOfFork.Kept())
}

// A job preempted n times allocates in proportion to n, not n²: its
// record's aborted runs grow in place.
func TestAbortGrowsInPlace(t *testing.T) {
	var r trace.JobRecord
	allocs := testing.AllocsPerRun(1, func() {
		r = trace.JobRecord{}
		for k := range int64(1000) {
			r.Abort(k, 0)
		}
	})
	require.Len(t, r.Aborted(), 1000)
	// One aborts a call, and a doubling of each array now and then.
	require.Less(t, allocs, 1000+2*20.0)
}
