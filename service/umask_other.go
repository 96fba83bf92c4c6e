//go:build !unix

package service

// narrowUmask does nothing where there is no umask; the socket's mode is
// set right after it is created.
func narrowUmask() (restore func()) { return func() {} }
