package lease

import (
	"bytes"
	"os"
	"slices"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// The command's whole tree, on Linux. A process group is not enough to
// end a command: a child that calls setsid (a daemon, `nohup setsid`) or
// setpgid leaves it, and one whose parent exits is reparented away from
// the wrapper. So the wrapper makes itself a child subreaper before it
// starts the command: every orphan of the command's tree is reparented
// to the wrapper, not to init, and stays findable as its descendant in
// /proc (proc(5): the ppid and pgrp fields of /proc/PID/stat). The
// limits (a wrapper killed with SIGKILL, a descendant that double-forks
// under another subreaper) are in docs/workflows.md.

// becomeSubreaper makes the wrapper its orphans' new parent
// (prctl(2) PR_SET_CHILD_SUBREAPER, Linux 3.4 and later).
func becomeSubreaper() error {
	return unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
}

// procStat is what one /proc/PID/stat says of a process.
type procStat struct {
	pid, ppid, pgrp int
	zombie          bool
}

// readProcStat parses /proc/PID/stat: "pid (comm) state ppid pgrp …",
// where comm may hold spaces and parentheses, so the fields are counted
// from its last ')'.
func readProcStat(b []byte) (procStat, bool) {
	i := bytes.IndexByte(b, ' ')
	j := bytes.LastIndexByte(b, ')')
	if i < 0 || j < i {
		return procStat{}, false
	}
	pid, err := strconv.Atoi(string(b[:i]))
	if err != nil {
		return procStat{}, false
	}
	f := bytes.Fields(b[j+1:])
	if len(f) < 3 {
		return procStat{}, false
	}
	ppid, err1 := strconv.Atoi(string(f[1]))
	pgrp, err2 := strconv.Atoi(string(f[2]))
	if err1 != nil || err2 != nil {
		return procStat{}, false
	}
	return procStat{pid: pid, ppid: ppid, pgrp: pgrp, zombie: len(f[0]) == 1 && f[0][0] == 'Z'}, true
}

// allProcs reads every process's stat; one that ends while it is read is
// left out.
func allProcs() []procStat {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var ps []procStat
	for _, e := range ents {
		if c := e.Name()[0]; c < '0' || c > '9' {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		if s, ok := readProcStat(b); ok {
			ps = append(ps, s)
		}
	}
	return ps
}

// commandTree is the command's processes among ps: every member of its
// group pgid wherever it was reparented, and every descendant of the
// wrapper self, except the wrapper's own children in keep (its watchdog)
// and the ones it started in its own group selfGroup (the Slurm
// commands it runs). Zombies are in it: the caller reaps its own.
func commandTree(ps []procStat, self, selfGroup, pgid int, keep []int) []procStat {
	kids := map[int][]int{}
	byPid := make(map[int]procStat, len(ps))
	for _, p := range ps {
		kids[p.ppid] = append(kids[p.ppid], p.pid)
		byPid[p.pid] = p
	}
	in := map[int]bool{}
	var tree []procStat
	add := func(p procStat) {
		if !in[p.pid] {
			in[p.pid] = true
			tree = append(tree, p)
		}
	}
	for _, p := range ps {
		if p.pgrp == pgid && p.pid != self {
			add(p)
		}
	}
	queue := []int{}
	for _, c := range kids[self] {
		p := byPid[c]
		if slices.Contains(keep, c) || p.pgrp == selfGroup {
			continue
		}
		queue = append(queue, c)
	}
	for len(queue) > 0 {
		c := queue[0]
		queue = queue[1:]
		add(byPid[c])
		queue = append(queue, kids[c]...)
	}
	// The group's members' own descendants (when they were reparented
	// elsewhere, without the subreaper) are the command's too.
	for i := 0; i < len(tree); i++ {
		for _, c := range kids[tree[i].pid] {
			add(byPid[c])
		}
	}
	return tree
}

// treeOf is the command's live processes (the main one, pid, included
// while it runs), less the members of group skip (0: none; a group
// signalled as a whole must not have its members signalled twice). The
// zombies among the wrapper's orphans are reaped on the way; the main
// process is left to its own wait.
func treeOf(pid, pgid int, keep []int, skip int) []int {
	self := os.Getpid()
	var live []int
	for _, p := range commandTree(allProcs(), self, syscall.Getpgrp(), pgid, keep) {
		switch {
		case !p.zombie && p.pgrp != skip:
			live = append(live, p.pid)
		case p.ppid == self && p.pid != pid:
			var ws syscall.WaitStatus
			_, _ = syscall.Wait4(p.pid, &ws, syscall.WNOHANG, nil)
		}
	}
	return live
}

// markedProcs are the processes other than this one whose environment
// holds MarkEnv=mark: the command's, wherever they were reparented. The
// watchdog, which is no ancestor of the command, finds by it what left the
// command's group after the wrapper died (a process that clears its
// environment is not found: docs/workflows.md).
func markedProcs(mark string) []int {
	if mark == "" {
		return nil
	}
	want := []byte(MarkEnv + "=" + mark + "\x00")
	self := os.Getpid()
	var pids []int
	for _, p := range allProcs() {
		if p.pid == self || p.zombie {
			continue
		}
		env, err := os.ReadFile("/proc/" + strconv.Itoa(p.pid) + "/environ")
		if err != nil {
			continue
		}
		if bytes.HasPrefix(env, want) || bytes.Contains(env, append([]byte{0}, want...)) {
			pids = append(pids, p.pid)
		}
	}
	return pids
}
