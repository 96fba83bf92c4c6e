package service

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
)

// A trusted data directory (issue 34 §2). The journal decides what the
// service has promised; whoever can write the directory, or any directory
// above it, can replace it, or plant a symbolic link that makes the
// service write its journal somewhere else (a 0777 directory of another
// user, with bursar.wal a link, used to be taken as is by a server run as
// root). So, as OpenSSH's StrictModes does for ~/.ssh:
//
//   - the data directory must be owned by the server's user and not be
//     group- or world-writable;
//   - each directory above it (of its real path) must be owned by that
//     user or by root and not be group- or world-writable — except a
//     root-owned sticky one such as /tmp, in which no other user can
//     rename or remove what the server owns;
//   - the directory is opened once (os.Root) and every later file
//     operation — reads, the atomic writes' temporary files and renames,
//     links, removals — is made through it, by name, refusing a name that
//     is a symbolic link: nothing is followed out of it, or within it.
//
// `bursar journal inspect` reads through the same root without the
// ownership checks (it changes nothing).

// dataDir is an open data directory.
type dataDir struct {
	path string // as given, for messages
	root *os.Root
}

// openDataDir checks and opens the data directory at p, creating it (mode
// 0700) when create is set; trust applies the ownership and mode checks.
func openDataDir(p string, create, trust bool) (*dataDir, error) {
	if create {
		if err := os.MkdirAll(p, 0o700); err != nil {
			return nil, fmt.Errorf("data dir: %w", err)
		}
	}
	if trust {
		if err := checkTrusted(p); err != nil {
			return nil, err
		}
	}
	root, err := os.OpenRoot(p)
	if err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	d := &dataDir{path: p, root: root}
	if trust {
		// The directory actually opened, not merely the one checked by
		// name a moment ago.
		st, err := root.Stat(".")
		if err == nil {
			err = checkOwnedDir(p, st, false)
		}
		if err != nil {
			root.Close()
			return nil, err
		}
	}
	return d, nil
}

// checkTrusted applies the ownership and mode rules to the data
// directory's real path and every directory above it.
func checkTrusted(p string) error {
	abs, err := filepath.Abs(p)
	if err == nil {
		abs, err = filepath.EvalSymlinks(abs)
	}
	if err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	st, err := os.Stat(abs)
	if err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	if err := checkOwnedDir(p, st, false); err != nil {
		return err
	}
	for dir := filepath.Dir(abs); ; dir = filepath.Dir(dir) {
		st, err := os.Stat(dir)
		if err != nil {
			return fmt.Errorf("data dir: %w", err)
		}
		if err := checkOwnedDir(dir, st, true); err != nil {
			return err
		}
		if dir == filepath.Dir(dir) {
			return nil
		}
	}
}

// checkOwnedDir checks one directory: the data directory itself (owned by
// this user) or, with ancestor, a directory above it (this user or root;
// a root-owned sticky directory may be writable by all).
func checkOwnedDir(p string, st fs.FileInfo, ancestor bool) error {
	if !st.IsDir() {
		return fmt.Errorf("data dir %s is not a directory", p)
	}
	owner, ok := fileOwner(st)
	if !ok {
		return nil // no owners to check on this system
	}
	me, mode := uint32(os.Geteuid()), st.Mode()
	what := "the data directory"
	if ancestor {
		what = "a directory above the data directory"
	}
	switch {
	case owner != me && !(ancestor && owner == 0):
		fix := fmt.Sprintf("give the service a directory of its own (mkdir -m 0700 as uid %d), or chown %d %s", me, me, shellQuote(p))
		if ancestor {
			fix = "put the data directory under directories owned by you or root"
		}
		return fmt.Errorf("%s %s is owned by uid %d, not by this server's user (uid %d) or root: anyone who owns it can replace the journal; %s",
			what, p, owner, me, fix)
	case mode.Perm()&0o022 != 0 && !(ancestor && owner == 0 && mode&os.ModeSticky != 0):
		return fmt.Errorf("%s %s is writable by its group or by all (mode %04o): others could replace the journal or plant a link in it; chmod go-w %s",
			what, p, mode.Perm(), shellQuote(p))
	}
	return nil
}

// Close releases the directory.
func (d *dataDir) Close() error { return d.root.Close() }

// join is name's path, for messages.
func (d *dataDir) join(name string) string { return filepath.Join(d.path, name) }

// errLink refuses a symbolic link in the data directory.
func (d *dataDir) errLink(name string) error {
	return fmt.Errorf("data dir: %s is a symbolic link; the service follows none in its data directory (one planted there would redirect the journal): remove it (rm %s) and restore the file it stands for",
		d.join(name), shellQuote(d.join(name)))
}

// noLink refuses name when it is a symbolic link (a missing name passes).
func (d *dataDir) noLink(name string) error {
	st, err := d.root.Lstat(name)
	if err == nil && st.Mode()&os.ModeSymlink != 0 {
		return d.errLink(name)
	}
	return nil
}

// OpenFile opens name in the directory, never through a symbolic link.
func (d *dataDir) OpenFile(name string, flag int, perm os.FileMode) (*os.File, error) {
	if err := d.noLink(name); err != nil {
		return nil, err
	}
	return d.root.OpenFile(name, flag|oNoFollow, perm)
}

// Open opens name for reading.
func (d *dataDir) Open(name string) (*os.File, error) { return d.OpenFile(name, os.O_RDONLY, 0) }

// ReadFile reads name.
func (d *dataDir) ReadFile(name string) ([]byte, error) {
	f, err := d.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// Stat describes name itself (a link is refused, not followed).
func (d *dataDir) Stat(name string) (os.FileInfo, error) {
	st, err := d.root.Lstat(name)
	if err == nil && st.Mode()&os.ModeSymlink != 0 {
		return nil, d.errLink(name)
	}
	return st, err
}

// Remove removes name (a link itself, never what it points to).
func (d *dataDir) Remove(name string) error { return d.root.Remove(name) }

// Rename renames oldName to newName within the directory.
func (d *dataDir) Rename(oldName, newName string) error {
	if err := d.noLink(oldName); err != nil {
		return err
	}
	return d.root.Rename(oldName, newName)
}

// Link makes newName a hard link to oldName.
func (d *dataDir) Link(oldName, newName string) error {
	if err := d.noLink(oldName); err != nil {
		return err
	}
	return d.root.Link(oldName, newName)
}

// Sync makes the directory's entries durable.
func (d *dataDir) Sync() error {
	f, err := d.root.Open(".")
	if err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	return nil
}

// Glob lists the names in the directory matching pattern.
func (d *dataDir) Glob(pattern string) []string {
	f, err := d.root.Open(".")
	if err != nil {
		return nil
	}
	defer f.Close()
	names, _ := f.Readdirnames(-1)
	var out []string
	for _, n := range names {
		if ok, _ := path.Match(pattern, n); ok {
			out = append(out, n)
		}
	}
	return out
}

// writeAtomic replaces name with what fill writes, mode 0600: through a
// temporary file .<name>.tmp-<random> made in the directory, fsynced,
// renamed over name, and the directory fsynced; a reader sees the old
// file or the new one.
func (d *dataDir) writeAtomic(name string, fill func(io.Writer) error) (err error) {
	var rnd [6]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return err
	}
	tmp := "." + name + ".tmp-" + hex.EncodeToString(rnd[:])
	f, err := d.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|oNoFollow, 0o600)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			_ = d.root.Remove(tmp)
		}
	}()
	if err = fill(f); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = d.root.Rename(tmp, name); err != nil {
		return err
	}
	return d.Sync()
}

// writeFile0600 replaces name atomically with data.
func (d *dataDir) writeFile0600(name string, data []byte) error {
	return d.writeAtomic(name, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// isNotExist reports a missing file, whatever wrapped it.
func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }
