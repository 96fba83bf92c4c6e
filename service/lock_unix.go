//go:build unix

package service

import (
	"os"
	"syscall"
)

// lockFile takes an exclusive advisory lock on the journal file for the
// life of the process: two services replaying and appending to one file
// would interleave records and corrupt both histories. The kernel drops
// the lock when the process dies, so a crash never leaves it stale.
func lockFile(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
}
