package service

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
)

// RepairReport says what RepairJournal cut.
type RepairReport struct {
	// Path is the journal file.
	Path string
	// Kept is the records kept (the header included), Offset the new
	// length of the file, CutBytes what was cut and CutIntact how many of
	// the cut records were intact (operations knowingly given up).
	Kept      int
	Offset    int64
	CutBytes  int64
	CutIntact int
}

// RepairJournal cuts the journal file in dir after its first cutAfter
// records (the header is record 1), as the start-up error for a damaged
// record says: it is the explicit, logged decision to lose what follows.
// It refuses when one of the records to keep is itself damaged, and takes
// the data directory's lock, so it cannot run under a live service.
func RepairJournal(dir string, cutAfter int) (RepairReport, error) {
	path := filepath.Join(dir, walName)
	rep := RepairReport{Path: path}
	if cutAfter < 1 {
		return rep, fmt.Errorf("--cut-after must be at least 1 (record 1 is the journal's header), got %d", cutAfter)
	}
	lock, err := os.OpenFile(filepath.Join(dir, lockName), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return rep, fmt.Errorf("data dir: %w", err)
	}
	defer lock.Close()
	if err := lockFile(lock); err != nil {
		return rep, fmt.Errorf("the data directory %s is in use by a running service; stop it first: %w", dir, err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return rep, fmt.Errorf("journal file: %w", err)
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 64<<10)
	for i := 1; i <= cutAfter; i++ {
		line, err := readLine(r)
		if err != nil {
			return rep, fmt.Errorf("journal file %s: record %d (at offset %d) is damaged or missing, so it cannot be kept: cut after %d at most",
				path, i, rep.Offset, i-1)
		}
		if _, reason := checkLine(line); reason != "" {
			return rep, fmt.Errorf("journal file %s: record %d (at offset %d) is damaged (%s), so it cannot be kept: cut after %d at most",
				path, i, rep.Offset, reason, i-1)
		}
		rep.Offset += int64(len(line))
		rep.Kept++
	}
	rep.CutIntact = countIntact(r)
	st, err := f.Stat()
	if err != nil {
		return rep, fmt.Errorf("journal file: %w", err)
	}
	rep.CutBytes = st.Size() - rep.Offset
	if rep.CutBytes == 0 {
		return rep, nil
	}
	if err := f.Truncate(rep.Offset); err != nil {
		return rep, fmt.Errorf("journal file: %w", err)
	}
	if err := f.Sync(); err != nil {
		return rep, fmt.Errorf("journal file: %w", err)
	}
	return rep, nil
}
