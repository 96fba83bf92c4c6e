package trace

import (
	"slices"
	"testing"
)

// A fork reads the replay's checkpoints as they were when it was taken,
// however the replay's grow after, and adds its own on top without
// changing the replay's. By hand: job 1 kept 60 s then 120 s more in the
// replay, job 2 60 s; a fork taken between the first two changes.
func TestForkReadsCheckpointsAsAtTheFork(t *testing.T) {
	var replay checkpoints
	replay.add(1, 60, 3)
	fork := checkpoints{view: &replay, seen: replay.seq}
	replay.add(1, 120, 3)
	replay.add(2, 60, 3)
	fork.add(1, 30, 3)
	fork.add(0, 10, 3)
	got := []int64{replay.of(0), replay.of(1), replay.of(2), fork.of(0), fork.of(1), fork.of(2)}
	if want := []int64{0, 180, 60, 10, 90, 0}; !slices.Equal(got, want) {
		t.Fatalf("replay's then fork's kept %v, want %v", got, want)
	}
}
