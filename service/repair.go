package service

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"time"

	"github.com/bursar-hpc/bursar/policy"
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
	// Backup is the copy of the file made before it was changed.
	Backup string
}

// lockDir opens the data directory (checked as the service checks it,
// datadir.go) and takes its lock, so that no repair runs under a live
// service.
func lockDir(dir string) (d *dataDir, unlock func(), err error) {
	d, err = openDataDir(dir, false, true)
	if err != nil {
		return nil, nil, err
	}
	lock, err := d.OpenFile(lockName, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		d.Close()
		return nil, nil, fmt.Errorf("data dir: %w", err)
	}
	if err := lockFile(lock); err != nil {
		lock.Close()
		d.Close()
		return nil, nil, fmt.Errorf("the data directory %s is in use by a running service; stop it first: %w", dir, err)
	}
	return d, func() { lock.Close(); d.Close() }, nil
}

// backup copies name to name.bak-<UTC time> (mode 0600) before a repair
// changes it, and returns the copy's path.
func backup(d *dataDir, name string) (string, error) {
	data, err := d.ReadFile(name)
	if err != nil {
		return "", fmt.Errorf("backup: %w", err)
	}
	bak := name + ".bak-" + time.Now().UTC().Format("20060102T150405.000Z")
	if err := d.writeFile0600(bak, data); err != nil {
		return "", fmt.Errorf("backup: %w", err)
	}
	return d.join(bak), nil
}

// coveredBefore is how many operations precede the live journal: those of
// the snapshot and of a sealed segment beside it.
func coveredBefore(d *dataDir, cfg policy.Config) (int64, error) {
	ops, err := loadSnapshot(d, cfg, func(*op) error { return nil })
	if err != nil {
		return 0, err
	}
	if f, err := d.Open(walOldName); err == nil {
		rep := ReplayReport{Records: map[string]int{}}
		base, n, _, err := replaySegment(f, cfg, ops, func(*op) error { return nil }, &rep, false, d.path)
		f.Close()
		switch {
		case errors.Is(err, errCovered):
		case err != nil:
			return 0, fmt.Errorf("%s: %w", d.join(walOldName), err)
		default:
			ops = base + n
		}
	}
	return ops, nil
}

// headerLine renders a journal segment's header record.
func headerLine(cfg policy.Config, base int64) ([]byte, error) {
	payload, err := json.Marshal(&op{Op: opOpen, Version: walVersion, Config: &cfg, Base: base, Wall: time.Now().UnixMilli()})
	if err != nil {
		return nil, err
	}
	line := fmt.Appendf(nil, "%08x ", crc32.Checksum(payload, crcTable))
	line = append(line, payload...)
	return append(line, '\n'), nil
}

// lockForHeader checks the broker flags a new journal header is made
// from and locks the data directory; the caller runs the returned unlock.
func lockForHeader(dir string, cfg policy.Config) (*dataDir, func(), error) {
	if err := cfg.Validate(); err != nil {
		return nil, nil, fmt.Errorf("broker flags: %w", err)
	}
	return lockDir(dir)
}

// freshHeader is the journal header (record 1) for cfg and the
// operations the snapshot already covers.
func freshHeader(d *dataDir, cfg policy.Config) ([]byte, error) {
	base, err := coveredBefore(d, cfg)
	if err != nil {
		return nil, err
	}
	return headerLine(cfg, base)
}

// RewriteHeader replaces a damaged header (record 1) of the journal file
// with one made from cfg and the operations before the journal, keeping
// every record after it; the file is backed up first. The broker
// parameters must be the ones the service runs with (a wrong pool is
// caught at the next start only if the snapshot's header disagrees).
func RewriteHeader(dir string, cfg policy.Config) (RepairReport, error) {
	path := filepath.Join(dir, walName)
	rep := RepairReport{Path: path}
	d, unlock, err := lockForHeader(dir, cfg)
	if err != nil {
		return rep, err
	}
	defer unlock()
	data, err := d.ReadFile(walName)
	if err != nil {
		return rep, fmt.Errorf("journal file: %w", err)
	}
	hdr, err := freshHeader(d, cfg)
	if err != nil {
		return rep, err
	}
	rest := []byte(nil)
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		rest = data[i+1:]
	}
	if rep.Backup, err = backup(d, walName); err != nil {
		return rep, err
	}
	_ = d.Remove(markName) // the header's length changes
	if err := d.writeFile0600(walName, append(hdr, rest...)); err != nil {
		return rep, fmt.Errorf("journal file: %w", err)
	}
	rep.Kept = 1 + bytes.Count(rest, []byte("\n"))
	rep.Offset = int64(len(hdr) + len(rest))
	return rep, nil
}

// NewJournal starts an empty journal file after the snapshot, when the
// old one is missing or empty: the explicit decision to lose whatever was
// acknowledged after the snapshot. An existing non-empty file is refused
// (cut it with --cut-after, or move it away first).
func NewJournal(dir string, cfg policy.Config) (RepairReport, error) {
	path := filepath.Join(dir, walName)
	rep := RepairReport{Path: path}
	d, unlock, err := lockForHeader(dir, cfg)
	if err != nil {
		return rep, err
	}
	defer unlock()
	if st, err := d.Stat(walName); err == nil && st.Size() > 0 {
		return rep, fmt.Errorf("journal file %s exists and is not empty; --new-journal only replaces a missing or empty one", path)
	}
	hdr, err := freshHeader(d, cfg)
	if err != nil {
		return rep, err
	}
	_ = d.Remove(markName)
	if err := d.writeFile0600(walName, hdr); err != nil {
		return rep, fmt.Errorf("journal file: %w", err)
	}
	rep.Kept, rep.Offset = 1, int64(len(hdr))
	return rep, nil
}

// RepairSnapshot rebuilds a damaged snapshot from the previous one and
// the journal segment between them (compaction keeps both); the damaged
// file is kept as a backup. The broker parameters come from their
// headers.
func RepairSnapshot(dir string) (RepairReport, error) {
	path := filepath.Join(dir, snapName)
	rep := RepairReport{Path: path}
	d, unlock, err := lockDir(dir)
	if err != nil {
		return rep, err
	}
	defer unlock()
	cfg, err := segmentConfig(d, walPrevName)
	if err != nil {
		return rep, fmt.Errorf("no previous journal segment to rebuild the snapshot from (%w); restore %s from a backup", err, path)
	}
	// A damaged kept file ends the repair here, naming it: the replay's
	// own message would offer a --cut-after, which acts on the live
	// journal, not on the kept segment.
	if seg, err := inspectSegment(d, walPrevName, 0); err == nil && seg.Damage != "" {
		return rep, fmt.Errorf("the kept segment %s is damaged too (record %d at offset %d: %s), so %s cannot be rebuilt from it: "+
			"restore %s or %s from a backup, then run this again", d.join(walPrevName), seg.DamageRecord, seg.DamageOffset, seg.Damage,
			path, snapName, walPrevName)
	}
	if sn, err := inspectSnapshot(d, snapPrevName); err == nil && sn != nil && sn.Damage != "" {
		return rep, fmt.Errorf("the kept previous snapshot %s is damaged too (%s), so %s cannot be rebuilt from it: "+
			"restore %s or %s from a backup, then run this again", d.join(snapPrevName), sn.Damage, path, snapName, snapPrevName)
	}
	if _, err := d.Stat(snapName); err == nil {
		if rep.Backup, err = backup(d, snapName); err != nil {
			return rep, err
		}
	}
	if err := fold(d, snapPrevName, walPrevName, snapName, cfg); err != nil {
		return rep, fmt.Errorf("rebuild %s from %s and %s: %w", path, snapPrevName, walPrevName, err)
	}
	return rep, nil
}

// segmentConfig reads the broker parameters from the header of segment
// name.
func segmentConfig(d *dataDir, name string) (policy.Config, error) {
	path := d.join(name)
	f, err := d.Open(name)
	if err != nil {
		return policy.Config{}, err
	}
	defer f.Close()
	line, err := readLine(bufio.NewReader(f))
	if err != nil {
		return policy.Config{}, fmt.Errorf("%s: no header", path)
	}
	payload, reason := checkLine(line)
	if reason != "" {
		return policy.Config{}, fmt.Errorf("%s: header %s", path, reason)
	}
	var o op
	if err := json.Unmarshal(payload, &o); err != nil || o.Config == nil {
		return policy.Config{}, fmt.Errorf("%s: header does not decode", path)
	}
	return *o.Config, nil
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
		return rep, fmt.Errorf("--cut-after must be at least 1 (record 1 is the journal's header; a damaged header is rewritten with --rewrite-header), got %d", cutAfter)
	}
	d, unlock, err := lockDir(dir)
	if err != nil {
		return rep, err
	}
	defer unlock()
	f, err := d.OpenFile(walName, os.O_RDWR, 0)
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
	if rep.Backup, err = backup(d, walName); err != nil {
		return rep, err
	}
	// The length mark would call the cut a truncation.
	_ = d.Remove(markName)
	if err := f.Truncate(rep.Offset); err != nil {
		return rep, fmt.Errorf("journal file: %w", err)
	}
	if err := f.Sync(); err != nil {
		return rep, fmt.Errorf("journal file: %w", err)
	}
	return rep, nil
}

// LossReport says what RebuildSnapshotWithLoss gave up.
type LossReport struct {
	// Path is the rebuilt snapshot; Backups the copies of the files it
	// replaced or set aside (the damaged snapshot, the kept segment, the
	// live journal).
	Path    string
	Backups []string
	// FromRecord is the first record of the kept segment that was lost
	// (the damaged one), LostPrev the records of the kept segment from it
	// on, and LostLive the records of the live journal (and of a sealed
	// segment beside it), all given up.
	FromRecord, LostPrev, LostLive int
}

// RebuildSnapshotWithLoss is the way out when bursar.snap and the kept
// segment bursar.wal.prev are both damaged and no backup of either is at
// hand: the snapshot is rebuilt from bursar.snap.prev and the records of
// bursar.wal.prev before its damage, and the journal after it (the rest
// of the kept segment, the live journal) is set aside and replaced by an
// empty one. Everything acknowledged after the damaged record is lost,
// knowingly: the report counts it. Each file replaced or set aside is
// backed up first.
func RebuildSnapshotWithLoss(dir string) (LossReport, error) {
	rep := LossReport{Path: filepath.Join(dir, snapName)}
	d, unlock, err := lockDir(dir)
	if err != nil {
		return rep, err
	}
	defer unlock()
	cfg, err := segmentConfig(d, walPrevName)
	if err != nil {
		return rep, fmt.Errorf("no kept segment with an intact header to rebuild the snapshot from (%w); restore %s from a backup", err, rep.Path)
	}
	seg, err := inspectSegment(d, walPrevName, 0)
	if err != nil {
		return rep, err
	}
	if seg.Damage == "" {
		return rep, fmt.Errorf("the kept segment %s is sound: rebuild the snapshot with --snapshot, which loses nothing", d.join(walPrevName))
	}
	if sn, err := inspectSnapshot(d, snapPrevName); err != nil || sn == nil || sn.Damage != "" {
		return rep, fmt.Errorf("the kept previous snapshot %s is missing or damaged too: restore %s or %s from a backup", d.join(snapPrevName), snapName, snapPrevName)
	}
	data, err := d.ReadFile(walPrevName)
	if err != nil {
		return rep, err
	}
	rep.FromRecord = seg.DamageRecord
	rep.LostPrev = bytes.Count(data[seg.DamageOffset:], []byte("\n"))
	const intact = walPrevName + ".intact"
	if err := d.writeFile0600(intact, data[:seg.DamageOffset]); err != nil {
		return rep, err
	}
	defer d.Remove(intact)
	// Back up what is replaced or set aside, before any of it changes.
	var aside []string
	for _, name := range []string{snapName, walPrevName, walOldName, walName} {
		if _, err := d.Stat(name); err != nil {
			continue
		}
		bak, err := backup(d, name)
		if err != nil {
			return rep, err
		}
		rep.Backups = append(rep.Backups, bak)
		if name == walOldName || name == walName {
			b, _ := d.ReadFile(name)
			if n := bytes.Count(b, []byte("\n")); n > 0 {
				rep.LostLive += n - 1 // less the header
			}
			aside = append(aside, name)
		}
	}
	if err := fold(d, snapPrevName, intact, snapName, cfg); err != nil {
		return rep, fmt.Errorf("rebuild %s from %s and the intact part of %s: %w", rep.Path, snapPrevName, walPrevName, err)
	}
	// The journal after the snapshot starts afresh: the damaged kept
	// segment and the live journal no longer follow it.
	for _, name := range append(aside, walPrevName, markName) {
		if err := d.Remove(name); err != nil && !errors.Is(err, os.ErrNotExist) {
			return rep, err
		}
	}
	hdr, err := freshHeader(d, cfg)
	if err != nil {
		return rep, err
	}
	if err := d.writeFile0600(walName, hdr); err != nil {
		return rep, fmt.Errorf("journal file: %w", err)
	}
	return rep, nil
}
