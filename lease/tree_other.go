//go:build unix && !linux

package lease

// Without /proc and PR_SET_CHILD_SUBREAPER the command's tree is its
// process group (see tree_linux.go).

func becomeSubreaper() error { return nil }

// treeOf is empty: only the group is signalled.
func treeOf(pid, pgid int, keep []int, skip int) []int { return nil }

// markedProcs is empty: there is no /proc to search.
func markedProcs(mark string) []int { return nil }
