//go:build unix

package service

import "syscall"

// openFileLimit is the process's soft limit on open descriptors, 0 when
// it cannot be read. (The Go runtime raises the soft limit to the hard one
// at start, so this is what the process can really use.)
func openFileLimit() int {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil || r.Cur > 1<<30 {
		return 0
	}
	return int(r.Cur)
}
