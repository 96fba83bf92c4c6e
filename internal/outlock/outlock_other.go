//go:build !unix

package outlock

import "errors"

// File is the lock's name in an output folder.
const File = ".bursar.lock"

// ErrBusy is what Take's error wraps when another process holds the lock.
var ErrBusy = errors.New("output folder in use")

// Lock is a held folder lock; without flock(2) there is none.
type Lock struct{}

// Take does nothing where flock(2) is missing.
func Take(dir, what string) (*Lock, error) { return &Lock{}, nil }

// Release does nothing.
func (l *Lock) Release() {}
