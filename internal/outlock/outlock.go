//go:build unix

package outlock

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// File is the lock's name in an output folder; a manifest never lists it.
const File = ".bursar.lock"

// ErrBusy is what Take's error wraps when another process holds the lock.
var ErrBusy = errors.New("output folder in use")

// Lock is a held folder lock.
type Lock struct {
	f    *os.File
	path string
}

// Take creates dir if need be and locks it for what, a line saying who
// holds it ("bursar-sweep paper"). It fails at once, wrapping ErrBusy and
// naming the holder, when another process holds it.
func Take(dir, what string) (*Lock, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, File)
	for {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return nil, fmt.Errorf("lock %s: %w", dir, err)
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			holder, _ := os.ReadFile(path)
			f.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				who := strings.TrimSpace(string(holder))
				if who == "" {
					who = "another process"
				}
				return nil, fmt.Errorf("%w: %s is writing into %s (%s); wait for it to end, or give another --out", ErrBusy, who, dir, path)
			}
			return nil, fmt.Errorf("lock %s: %w", dir, err)
		}
		// The holder before us may have removed the file between our open
		// and our flock: then we hold a lock on a file nobody else can
		// find, and must take the one at the path.
		fi, err1 := f.Stat()
		pi, err2 := os.Stat(path)
		if err1 != nil || err2 != nil || !os.SameFile(fi, pi) {
			f.Close()
			continue
		}
		_ = f.Truncate(0)
		_, _ = fmt.Fprintf(f, "%s (pid %d)\n", what, os.Getpid())
		return &Lock{f: f, path: path}, nil
	}
}

// Release removes the lock file and drops the lock. A nil Lock is fine.
func (l *Lock) Release() {
	if l == nil || l.f == nil {
		return
	}
	_ = os.Remove(l.path)
	_ = l.f.Close()
	l.f = nil
}
