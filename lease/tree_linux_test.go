package lease

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReadProcStat: the fields after comm are counted from its last ')',
// so a command named to confuse the parse is read right.
func TestReadProcStat(t *testing.T) {
	s, ok := readProcStat([]byte("4711 (evil) Z 1 2) S 99 4700 4700 0 -1"))
	require.True(t, ok)
	assert.Equal(t, procStat{pid: 4711, ppid: 99, pgrp: 4700}, s)
	s, ok = readProcStat([]byte("12 (sh) Z 10 12 12 0"))
	require.True(t, ok)
	assert.Equal(t, procStat{pid: 12, ppid: 10, pgrp: 12, zombie: true}, s)
	_, ok = readProcStat([]byte("garbage"))
	assert.False(t, ok)
}

// TestCommandTree: the wrapper (100, group 100) has the command (200,
// its own group), its watchdog (300), a Slurm command it runs in its own
// group (400), and an orphan of the command reparented to it after a
// setsid (500, with a child 501). A member of the command's group was
// reparented elsewhere (600, under init, with a child 601). The tree is
// the command's processes and nothing of the wrapper's own.
func TestCommandTree(t *testing.T) {
	ps := []procStat{
		{pid: 1, ppid: 0, pgrp: 1},
		{pid: 100, ppid: 1, pgrp: 100},
		{pid: 200, ppid: 100, pgrp: 200},
		{pid: 201, ppid: 200, pgrp: 200},
		{pid: 300, ppid: 100, pgrp: 300},
		{pid: 400, ppid: 100, pgrp: 100},
		{pid: 500, ppid: 100, pgrp: 500},
		{pid: 501, ppid: 500, pgrp: 500, zombie: true},
		{pid: 600, ppid: 1, pgrp: 200},
		{pid: 601, ppid: 600, pgrp: 601},
		{pid: 700, ppid: 1, pgrp: 700},
	}
	var got []int
	for _, p := range commandTree(ps, 100, 100, 200, []int{300}) {
		got = append(got, p.pid)
	}
	assert.ElementsMatch(t, []int{200, 201, 500, 501, 600, 601}, got)
}
