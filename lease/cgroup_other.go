//go:build unix && !linux

package lease

import (
	"errors"
	"syscall"
)

// No cgroups here: the command's end is its process group (see
// cgroup_linux.go).

type leaseCgroup struct{ dir string }

func cgroupParent() (string, error) { return "", errors.New("cgroups are Linux's") }

func newLeaseCgroup(parent, mark string) (*leaseCgroup, error) {
	return nil, errors.New("cgroups are Linux's")
}

func (c *leaseCgroup) procs() []int { return nil }
func (c *leaseCgroup) kill() error  { return nil }
func (c *leaseCgroup) closeDir()    {}
func (c *leaseCgroup) remove() error {
	return nil
}

func intoCgroup(*syscall.SysProcAttr, *leaseCgroup) {}

func killCgroupDir(string) error  { return nil }
func cgroupKillDir(string) error  { return nil }
func cgroupPopulated(string) bool { return false }
