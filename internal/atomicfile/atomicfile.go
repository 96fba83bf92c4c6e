// Package atomicfile writes files so that a reader never sees a half-written
// one: the bytes go to a temporary file in the same folder, which is synced
// and then renamed over the target.
package atomicfile

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Write writes data to path atomically, creating the parent folders.
func Write(path string, data []byte) error {
	return WriteFunc(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// WriteFunc streams the file's content from fill and renames the result
// into place only if fill and the sync succeed; otherwise the target is
// left as it was and the temporary file is removed. The file gets mode
// 0644 (outputs meant to be read); WriteFuncMode chooses another.
func WriteFunc(path string, fill func(io.Writer) error) error {
	return WriteFuncMode(path, 0o644, fill)
}

// WriteFuncMode is WriteFunc with the file's mode given. The mode is set on
// the temporary file before the rename, so a private file (a service's
// snapshot, mode 0600) is never visible under its name with a wider mode.
func WriteFuncMode(path string, mode os.FileMode, fill func(io.Writer) error) (err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create folder for %s: %w", path, err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()
	if err = fill(f); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", path, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", path, err)
	}
	if err = os.Chmod(tmp, mode); err != nil {
		return fmt.Errorf("chmod %s: %w", path, err)
	}
	if err = os.Rename(tmp, path); err != nil {
		return fmt.Errorf("rename into %s: %w", path, err)
	}
	return nil
}
