//go:build !unix

package service

import "io/fs"

// oNoFollow: no such open flag here. The data directory's names are still
// checked with Lstat before every open (dataDir.noLink), and os.Root
// refuses a path that leaves the directory; what remains open is the race
// between that check and the open, which on Unix O_NOFOLLOW closes.
const oNoFollow = 0

// fileOwner: no uid owners to check on this system (ownership and modes
// are Windows ACLs, which checkOwnedDir does not read).
func fileOwner(fs.FileInfo) (uint32, bool) { return 0, false }
