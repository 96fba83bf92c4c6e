package lease

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The command's own cgroup (issue 34 §3). Where the wrapper's cgroup is a
// cgroup v2 this user may write — a delegated one: `systemd-run --user
// --scope bursar lease …`, a container's own, or any as root — the
// command starts in a child cgroup of it (clone3 with CLONE_INTO_CGROUP:
// from its first instruction, so no fork can come before the move), and
// its end is one write of "1" to the child's cgroup.kill, which the
// kernel applies to every process in it at once, whatever their parents,
// sessions, groups or environments (Linux 5.14 and later). Nothing
// inside can leave: moving a process out needs write access to a common
// ancestor's cgroup.procs, which a delegated subtree's processes do not
// have above it. The child is removed when the lease is done. Where there
// is none (cgroup v1 only, an unwritable cgroup, an older kernel, a
// refused clone), the wrapper says so once and relies on its subreaper
// and the process tree (tree_linux.go), as before.

// cgroupV2Mount finds the cgroup v2 hierarchy in mountinfo: its mount
// point and the path within the hierarchy that is mounted there.
func cgroupV2Mount(mountinfo string) (point, root string, ok bool) {
	f, err := os.Open(mountinfo)
	if err != nil {
		return "", "", false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// id parent major:minor root point options [optional…] - fstype source super
		fields := strings.Fields(sc.Text())
		for i, fld := range fields {
			if fld == "-" && i+1 < len(fields) && fields[i+1] == "cgroup2" && len(fields) > 4 {
				return unescapeMount(fields[4]), unescapeMount(fields[3]), true
			}
		}
	}
	return "", "", false
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// ownCgroupV2 is this process's cgroup v2 path (the "0::" line of
// /proc/self/cgroup).
func ownCgroupV2(procCgroup string) (string, bool) {
	data, err := os.ReadFile(procCgroup)
	if err != nil {
		return "", false
	}
	for _, line := range strings.Split(string(data), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			return p, true
		}
	}
	return "", false
}

// cgroupParent is the directory of the wrapper's own cgroup v2, the
// parent of the command's.
func cgroupParent() (string, error) {
	point, root, ok := cgroupV2Mount("/proc/self/mountinfo")
	if !ok {
		return "", errors.New("no cgroup v2 hierarchy is mounted")
	}
	own, ok := ownCgroupV2("/proc/self/cgroup")
	if !ok {
		return "", errors.New("this process is in no cgroup v2")
	}
	rel, err := filepath.Rel(root, own)
	if err != nil || strings.HasPrefix(rel, "..") {
		return "", fmt.Errorf("this process's cgroup %s is not under the mounted %s", own, root)
	}
	return filepath.Join(point, rel), nil
}

// leaseCgroup is the command's cgroup.
type leaseCgroup struct {
	dir string
	fd  int // the directory, for CLONE_INTO_CGROUP
}

// newLeaseCgroup makes the command's cgroup under parent, named for the
// lease's mark; an error says why there is none (and leaves nothing).
func newLeaseCgroup(parent, mark string) (*leaseCgroup, error) {
	dir := filepath.Join(parent, "bursar-lease-"+mark)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("cannot make a cgroup under %s: %w", parent, errors.Unwrap(err))
	}
	if _, err := os.Stat(filepath.Join(dir, "cgroup.kill")); err != nil {
		_ = os.Remove(dir)
		return nil, fmt.Errorf("%s is no cgroup v2 with cgroup.kill (Linux 5.14 or later)", parent)
	}
	fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		_ = os.Remove(dir)
		return nil, fmt.Errorf("open %s: %w", dir, err)
	}
	return &leaseCgroup{dir: dir, fd: fd}, nil
}

// procs are the processes in the cgroup (zombies are not listed).
func (c *leaseCgroup) procs() []int {
	data, err := os.ReadFile(filepath.Join(c.dir, "cgroup.procs"))
	if err != nil {
		return nil
	}
	var out []int
	for _, f := range strings.Fields(string(data)) {
		if pid, err := strconv.Atoi(f); err == nil {
			out = append(out, pid)
		}
	}
	return out
}

// kill ends every process in the cgroup at once (cgroup.kill).
func (c *leaseCgroup) kill() error {
	return os.WriteFile(filepath.Join(c.dir, "cgroup.kill"), []byte("1"), 0)
}

// closeDir closes the directory CLONE_INTO_CGROUP was given.
func (c *leaseCgroup) closeDir() {
	if c.fd >= 0 {
		_ = syscall.Close(c.fd)
		c.fd = -1
	}
}

// remove removes the cgroup once it is empty, killing what is left, for
// a second at most; the directory is closed either way.
func (c *leaseCgroup) remove() error {
	c.closeDir()
	var err error
	for end := time.Now().Add(time.Second); ; time.Sleep(10 * time.Millisecond) {
		if err = syscall.Rmdir(c.dir); err == nil || errors.Is(err, syscall.ENOENT) {
			return nil
		}
		if time.Now().After(end) {
			return fmt.Errorf("remove the lease's cgroup %s: %w", c.dir, err)
		}
		if len(c.procs()) > 0 {
			_ = c.kill()
		}
	}
}

// cgroupKillDir is the watchdog's cgroup.kill of a command's cgroup by
// its path; a path that is no lease's cgroup is refused.
func cgroupKillDir(dir string) error {
	if !strings.HasPrefix(filepath.Base(dir), "bursar-lease-") {
		return fmt.Errorf("%s is not a lease's cgroup", dir)
	}
	c := &leaseCgroup{dir: dir, fd: -1}
	if err := c.kill(); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// killCgroupDir is cgroupKillDir, then the cgroup's removal once empty.
func killCgroupDir(dir string) error {
	if err := cgroupKillDir(dir); err != nil {
		return err
	}
	return (&leaseCgroup{dir: dir, fd: -1}).remove()
}

// cgroupPopulated reports whether the lease cgroup dir still holds a
// process (false once it is gone).
func cgroupPopulated(dir string) bool {
	c := &leaseCgroup{dir: dir, fd: -1}
	return len(c.procs()) > 0
}

// intoCgroup makes the process that attr starts begin in c.
func intoCgroup(attr *syscall.SysProcAttr, c *leaseCgroup) {
	attr.UseCgroupFD, attr.CgroupFD = true, c.fd
}
