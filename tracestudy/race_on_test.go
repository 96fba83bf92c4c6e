//go:build race

package tracestudy

// raceDetector is true in a -race build. The findings replays are pure,
// single-goroutine computations: the detector has nothing to check in them
// and makes them about fifteen times slower, so under -race they skip and
// .ci/run runs them in a plain build before the race suite.
const raceDetector = true
