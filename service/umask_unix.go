//go:build unix

package service

import "syscall"

// narrowUmask makes files created until restore is called private to the
// user (a socket is created 0777 &^ umask).
func narrowUmask() (restore func()) {
	old := syscall.Umask(0o177)
	return func() { syscall.Umask(old) }
}
