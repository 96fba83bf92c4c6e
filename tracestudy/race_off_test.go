//go:build !race

package tracestudy

// raceDetector is false in a plain build (see race_on_test.go).
const raceDetector = false
