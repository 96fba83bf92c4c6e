//go:build !unix

package service

import "os"

// lockFile is a no-op where flock(2) is not available; run one service per
// data directory there.
func lockFile(*os.File) error { return nil }
