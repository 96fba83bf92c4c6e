//go:build !unix

package service

// openFileLimit is unknown where getrlimit(2) is not available.
func openFileLimit() int { return 0 }
