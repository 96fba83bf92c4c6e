//go:build unix

package tracestudy

import "syscall"

// cpuTime is the process's user + system CPU time in nanoseconds: on a
// machine shared with other jobs it measures the work, where wall time
// measures the contention.
func cpuTime() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
