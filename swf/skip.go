package swf

import "fmt"

// Skip is why a record is not a replayable job (docs/studies.md §3, §6.13).
type Skip uint8

const (
	Keep      Skip = iota // a replayable job
	NoRunTime             // run time ≤ 0 or unknown: cancelled before it started, or not recorded
	NoProcs               // neither requested nor allocated processors known and positive
	TooWide               // wider than the pool in use (MaxProcs, or a smaller --pool)
)

func (s Skip) String() string {
	switch s {
	case Keep:
		return "kept"
	case NoRunTime:
		return "run time ≤ 0"
	case NoProcs:
		return "no processors"
	case TooWide:
		return "wider than the pool"
	}
	return fmt.Sprintf("Skip(%d)", uint8(s))
}

// Check says whether j is replayable on a pool of the given size, and if
// not, why. The reasons are tried in the order of the constants, so a
// record counts under its first reason only.
func Check(j *Job, pool int) Skip {
	switch p := j.Procs(); {
	case j.Run <= 0:
		return NoRunTime
	case p <= 0:
		return NoProcs
	case p > pool:
		return TooWide
	}
	return Keep
}

// Skips counts the skipped records by reason.
type Skips struct {
	NoRunTime int `json:"no_run_time"`
	NoProcs   int `json:"no_procs"`
	TooWide   int `json:"too_wide"`
}

// Add counts one record.
func (s *Skips) Add(r Skip) {
	switch r {
	case NoRunTime:
		s.NoRunTime++
	case NoProcs:
		s.NoProcs++
	case TooWide:
		s.TooWide++
	}
}

// Total is the number of records skipped.
func (s Skips) Total() int { return s.NoRunTime + s.NoProcs + s.TooWide }

func (s Skips) String() string {
	return fmt.Sprintf("%d skipped (%d run time ≤ 0, %d no processors, %d wider than the pool)",
		s.Total(), s.NoRunTime, s.NoProcs, s.TooWide)
}
