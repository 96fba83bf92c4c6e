package service

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bursar-hpc/bursar/policy"
)

// The journal file is a write-ahead log of operations (see op), one record
// per line:
//
//	<crc32c of the JSON, 8 lowercase hex digits> <space> <JSON object> \n
//
// A text format keeps the file greppable; the checksum makes a torn or
// corrupted record detectable. The first record is an "open" header that
// fixes the format version and the broker parameters, because replaying
// the same operations on a broker with another pool would build another
// state.

const (
	walName = "bursar.wal"
	// walVersion is the format this build writes. Version 2 adds the
	// "admit" (admission on request) and "slurm-job" (a lease bound to
	// its Slurm job) operations: a build that reads only version 1 then
	// refuses the whole journal by its header, before replaying any of
	// it, rather than at the first record it does not know.
	walVersion = 2
	// walMinVersion is the oldest format this build reads: a version-1
	// journal holds a subset of version 2's operations (builds from
	// before the bump wrote admit and slurm-job records under version 1
	// too, which is why version 1 is read with all of them).
	walMinVersion = 1
	// maxRecord bounds one line. Real records are well under a kilobyte
	// (a campaign name is at most 64 bytes); a longer line can only be
	// damage.
	maxRecord = 1 << 20
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// wal appends records and makes them durable with group commit: appends
// only write(2) into the page cache, and a single syncer goroutine fsyncs
// whatever has accumulated, so concurrent writers share one fsync.
//
// append is called with the Service lock held, which orders the records
// exactly as the operations were applied. waitDurable is called without
// it.
type wal struct {
	f    *os.File
	lock *os.File // holds the data directory's lock
	dd   *dataDir // the data directory, opened once (datadir.go)
	path string
	cfg  policy.Config
	// ops is the number of operations in the whole history (snapshot and
	// segments); a new segment's header records it as its base. It is
	// used under the Service lock.
	ops int64
	// fileMu keeps the syncer off the file while a rotation swaps it.
	fileMu sync.Mutex
	// sinceRotate counts records appended since the segment began
	// (under the Service lock); sealed is set while bursar.wal.old
	// exists, which forbids another rotation.
	sinceRotate int
	// sinceRotateBytes is the bytes appended since the segment began
	// (under the Service lock).
	sinceRotateBytes int64
	sealed           atomic.Bool
	// sealedState is the state at the end of a sealed segment that a
	// crash left (openWAL), and sealedBase its operations, for the
	// snapshot the service then finishes.
	sealedState *coreDump
	sealedBase  int64

	mu      sync.Mutex
	written int64         // offset after the last appended record
	synced  int64         // offset up to which an fsync has completed
	err     error         // sticky: after a failed write or fsync nothing is trusted
	notify  chan struct{} // closed (and replaced) whenever synced or err changes

	// segStart is the position at which the live segment began and
	// segBase its header's base (under fileMu or before the syncer
	// starts); lastMark is when the length mark was last written
	// (syncer only).
	segStart, segBase int64
	lastMark          time.Time

	kick      chan struct{} // wakes the syncer; capacity 1
	stop      chan struct{}
	stopped   chan struct{}
	closeOnce sync.Once
	buf       []byte // encoding scratch, used under the Service lock
}

// ReplayReport says what opening a data directory found.
type ReplayReport struct {
	// Path is the journal file.
	Path string
	// Created: the file was new (or empty) and got a fresh header.
	Created bool
	// Snapshot is the operations the snapshot loaded at start covered (0:
	// there was none), and SnapshotTime the broker time it ended at.
	Snapshot     int64
	SnapshotTime int
	// Records is the number of journal records replayed after the
	// snapshot, by operation name.
	Records map[string]int
	// Time is the broker time after replay.
	Time int
	// RemovedTemps are leftover temporary files of interrupted snapshot
	// writes, removed at start.
	RemovedTemps []string
	// CutOffset, CutBytes and CutReason describe a damaged tail that was
	// cut off (CutBytes 0: nothing was cut).
	CutOffset int64
	CutBytes  int64
	CutReason string
}

// errWALFailed wraps every write or fsync failure.
var errWALFailed = errors.New("journal file failed")

// Journal file names in the data directory: the live segment, the one
// sealed while a snapshot is being made from it, the snapshot, and the
// lock that keeps a second process out (a lock on the journal file itself
// would not survive its rotation).
const (
	walOldName = "bursar.wal.old"
	lockName   = "bursar.lock"
)

// openWAL opens (or creates) the journal in dir: it loads the snapshot,
// replays a sealed segment left by an interrupted snapshot and then the
// live journal file through apply, applies the tail policy (see
// replayFile) and returns the log ready for appending.
//
// A sealed segment left by an interrupted snapshot is replayed too;
// sealedState (when set) is then called right after it, and its answer
// kept for the snapshot the service finishes (wal.sealedState).
func openWAL(dir string, cfg policy.Config, apply func(*op) error, recoverTail bool, sealedState func() *coreDump) (*wal, ReplayReport, error) {
	rep := ReplayReport{Records: map[string]int{}}
	d, err := openDataDir(dir, true, true)
	if err != nil {
		return nil, rep, err
	}
	path := d.join(walName)
	rep.Path = path
	lock, err := d.OpenFile(lockName, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		d.Close()
		return nil, rep, fmt.Errorf("data dir: %w", err)
	}
	if err := lockFile(lock); err != nil {
		lock.Close()
		d.Close()
		return nil, rep, fmt.Errorf("journal file %s is in use by another process: %w", path, err)
	}
	var f *os.File
	fail := func(err error) (*wal, ReplayReport, error) {
		if f != nil {
			f.Close()
		}
		lock.Close()
		d.Close()
		return nil, rep, err
	}
	for _, name := range dataNames {
		if err := d.noLink(name); err != nil {
			return fail(err)
		}
	}

	rep.RemovedTemps = cleanTemps(d)
	// 1. The snapshot: every operation before ops.
	ops, err := loadSnapshot(d, cfg, apply)
	if err != nil {
		return fail(err)
	}
	rep.Snapshot = ops
	_, serr := d.Stat(snapName)
	hasSnap := serr == nil
	// 2. A segment sealed for a snapshot that did not finish; the
	// service finishes that snapshot (sealedLeft).
	sealedLeft := false
	var sealed *coreDump
	var sealedOps int64
	oldPath := d.join(walOldName)
	if of, err := d.Open(walOldName); err == nil {
		base, n, _, err := replaySegment(of, cfg, ops, apply, &rep, false, dir)
		of.Close()
		switch {
		case errors.Is(err, errCovered):
			// The snapshot was written; only moving the segment aside
			// was missed.
			_ = d.Rename(walOldName, walPrevName)
		case err != nil:
			return fail(fmt.Errorf("journal file %s: %w", oldPath, err))
		default:
			ops = base + n
			sealedLeft, sealedOps = true, ops
			if sealedState != nil {
				sealed = sealedState()
			}
		}
	} else if !isNotExist(err) {
		return fail(fmt.Errorf("journal file: %w", err))
	}
	// 3. The live segment. After a snapshot whose compaction finished
	// there is always one with a header (rotation wrote it before the
	// compaction began): missing or empty, operations acknowledged after
	// the snapshot may be gone, and the start is refused. Only a sealed
	// segment left by a crash in the middle of a rotation explains a
	// missing or empty one.
	if st, err := d.Stat(walName); hasSnap && !sealedLeft && (isNotExist(err) || err == nil && st.Size() == 0) {
		what := "is missing"
		if err == nil {
			what = "is empty"
		}
		return fail(fmt.Errorf("journal file %s %s, but the snapshot covers operations 1..%d and the journal after them belongs there: "+
			"operations acknowledged after the snapshot may be lost. Restore the file from a backup, or to start from the snapshot alone, "+
			"knowingly losing what came after it: bursar journal repair --data-dir %s --new-journal %s",
			path, what, ops, shellQuote(dir), brokerFlagArgs(cfg)))
	}
	f, err = d.OpenFile(walName, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fail(fmt.Errorf("journal file: %w", err))
	}
	base, n, good, err := replaySegment(f, cfg, ops, apply, &rep, recoverTail, dir)
	if err != nil {
		return fail(fmt.Errorf("journal file %s: %w", path, err))
	}
	if good > 0 {
		ops = base + n
	}
	st, err := f.Stat()
	if err != nil {
		return fail(fmt.Errorf("journal file: %w", err))
	}
	if good > 0 {
		if err := checkMark(d, base, st.Size()); err != nil {
			return fail(err)
		}
	}
	if st.Size() > good {
		rep.CutOffset, rep.CutBytes = good, st.Size()-good
		if err := f.Truncate(good); err != nil {
			return fail(fmt.Errorf("journal file: cut damaged tail: %w", err))
		}
		if err := f.Sync(); err != nil {
			return fail(fmt.Errorf("journal file: %w", err))
		}
		// What was cut is given up (--recover-tail or a torn write):
		// the mark must not call the shorter file a truncation.
		writeMark(d, lengthMark{Base: base, Bytes: good})
	}
	w := &wal{f: f, lock: lock, dd: d, path: path, cfg: cfg, ops: ops, written: good, synced: good,
		notify: make(chan struct{}), kick: make(chan struct{}, 1),
		stop: make(chan struct{}), stopped: make(chan struct{})}
	w.sealed.Store(sealedLeft)
	w.sealedState, w.sealedBase = sealed, sealedOps
	if good > 0 {
		w.segBase = base
	}
	if good == 0 {
		rep.Created = ops == 0
		if err := w.writeHeader(); err != nil {
			return fail(err)
		}
	}
	go w.syncer()
	return w, rep, nil
}

// writeHeader starts an empty segment with its "open" record, makes it
// durable, directory entry included, and counts it as synced.
func (w *wal) writeHeader() error {
	cfg := w.cfg
	w.mu.Lock()
	w.segStart, w.segBase = w.written, w.ops
	w.mu.Unlock()
	if _, err := w.append(&op{Op: opOpen, Version: walVersion, Config: &cfg, Base: w.ops}); err != nil {
		return err
	}
	if err := w.f.Sync(); err != nil {
		return fmt.Errorf("journal file: %w", err)
	}
	w.mu.Lock()
	w.synced = w.written
	w.mu.Unlock()
	return w.dd.Sync()
}

// errCovered: a sealed segment the snapshot already covers.
var errCovered = errors.New("segment covered by the snapshot")

// replaySegment replays one journal segment whose operations must start
// at operation number ops (the ones before came from the snapshot or the
// previous segment). It returns the segment's base, the operations
// replayed and the offset after the last good record.
func replaySegment(f *os.File, cfg policy.Config, ops int64, apply func(*op) error, rep *ReplayReport, recoverTail bool, dir string) (base, n int64, good int64, err error) {
	base = -1
	check := func(hdr *op) error {
		if err := checkHeader(hdr, cfg); err != nil {
			return err
		}
		base = hdr.Base
		switch {
		case base < ops:
			return errCovered
		case base > ops:
			return fmt.Errorf("the journal starts at operation %d but the snapshot and journal before it end at %d: operations are missing", base, ops)
		}
		return nil
	}
	counted := func(o *op) error {
		if err := apply(o); err != nil {
			return err
		}
		n++
		return nil
	}
	good, err = replayFile(f, check, counted, rep, recoverTail, dir, cfg)
	return base, n, good, err
}

// brokerFlagArgs spells a broker configuration as `bursar serve` flags.
func brokerFlagArgs(cfg policy.Config) string {
	s := fmt.Sprintf("--pool %d --grace %d --io-capacity %g --inference-capacity %g", cfg.Pool, cfg.Grace, cfg.IOCapacity, cfg.InferenceCapacity)
	if cfg.GrantTimeOnly {
		s += " --grant-time-only"
	}
	return s
}

// replayFile applies every intact record and returns the offset after the
// last one. header checks the first record.
//
// The tail policy: a last line without its newline is a write the crash
// cut short: it was never acknowledged (an answer waits for the fsync of
// the whole line), so it is cut with a warning. A damaged *complete*
// record may have been acknowledged; the service refuses to start and
// names the command that cuts it knowingly, unless recoverTail says to cut
// it. Damage followed by intact records is always refused: cutting there
// would throw away operations that were acknowledged.
func replayFile(f *os.File, header func(*op) error, apply func(*op) error, rep *ReplayReport, recoverTail bool, dir string, cfg policy.Config) (int64, error) {
	r := bufio.NewReaderSize(f, 64<<10)
	var off int64
	line0 := 0 // records read so far, header included
	for {
		line, rerr := readLine(r)
		if len(line) == 0 && rerr == io.EOF {
			return off, nil
		}
		var o *op
		reason, torn := "", false
		switch {
		case errors.Is(rerr, errLineTooLong):
			reason = "record longer than 1 MiB"
		case rerr == io.EOF:
			reason, torn = "torn record (no end of line)", looksTorn(line)
			if !torn {
				reason = "damaged record without end of line (not the prefix of a record: overwritten, not torn)"
			}
		case rerr != nil:
			return off, rerr
		default:
			var payload []byte
			payload, reason = checkLine(line)
			if reason == "" {
				o = new(op)
				if err := json.Unmarshal(payload, o); err != nil {
					return off, fmt.Errorf("record %d at offset %d has a valid checksum but does not decode (%v); refusing to cut acknowledged records", line0+1, off, err)
				}
			}
		}
		if o == nil && line0 == 0 && !torn {
			// --cut-after 0 would keep nothing, not even a header: the
			// header is rewritten instead, keeping every record after it.
			return off, fmt.Errorf("the journal's header (record 1) is damaged (%s); to rewrite it from the broker flags and the snapshot, "+
				"keeping every record after it (a backup is made first): bursar journal repair --data-dir %s --rewrite-header %s",
				reason, shellQuote(dir), brokerFlagArgs(cfg))
		}
		if o == nil {
			rep.CutReason = fmt.Sprintf("%s at offset %d", reason, off)
			repair := fmt.Sprintf("bursar journal repair --data-dir %s --cut-after %d", shellQuote(dir), line0)
			if n := countIntact(r); n > 0 {
				return off, fmt.Errorf("damaged record %d at offset %d (%s) is followed by %d intact records; "+
					"refusing to cut acknowledged records (to accept the loss: %s)", line0+1, off, reason, n, repair)
			}
			if torn || recoverTail {
				return off, nil
			}
			return off, fmt.Errorf("damaged record %d at offset %d (%s): the record is complete, so its operation may have been "+
				"acknowledged; refusing to start. To cut it (and lose that operation) knowingly: %s — or start once with --recover-tail",
				line0+1, off, reason, repair)
		}
		if line0 == 0 {
			if err := header(o); err != nil {
				return off, err
			}
		} else {
			if err := apply(o); err != nil {
				return off, fmt.Errorf("record %d at offset %d (%s at t=%d) does not replay: %w", line0+1, off, o.Op, o.T, err)
			}
			rep.Records[o.Op]++
		}
		line0++
		off += int64(len(line))
	}
}

// looksTorn reports whether a last line without newline can be the start
// of a record cut short: hex checksum digits, a space, then JSON text with
// no NUL byte. A block of zeros or other overwritten data is not torn.
func looksTorn(line []byte) bool {
	if len(line) > maxRecord || bytes.IndexByte(line, 0) >= 0 {
		return false
	}
	for i, c := range line {
		switch {
		case i < 8:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
				return false
			}
		case i == 8:
			if c != ' ' {
				return false
			}
		case i == 9:
			return c == '{'
		}
	}
	return true
}

// shellQuote quotes a path for a command line when it needs it.
func shellQuote(p string) string {
	if p != "" && strings.Trim(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+=:,@") == "" {
		return p
	}
	return "'" + strings.ReplaceAll(p, "'", `'\''`) + "'"
}

// checkHeader checks a segment's or snapshot's "open" record.
func checkHeader(o *op, cfg policy.Config) error {
	if o.Op != opOpen {
		return fmt.Errorf("not a bursar journal: first record is %q, want %q", o.Op, opOpen)
	}
	if o.Version < walMinVersion || o.Version > walVersion {
		return fmt.Errorf("journal format version %d, this build reads %d to %d", o.Version, walMinVersion, walVersion)
	}
	return sameConfig(o, cfg)
}

// sameConfig checks the header's broker parameters against the ones the
// service was started with.
func sameConfig(hdr *op, cfg policy.Config) error {
	if hdr.Config == nil {
		return errors.New("journal header has no broker parameters")
	}
	if *hdr.Config != cfg {
		return fmt.Errorf("the journal was written by a broker with %+v, but this one has %+v: "+
			"start with the same broker flags (or use another --data-dir)", *hdr.Config, cfg)
	}
	return nil
}

var errLineTooLong = errors.New("line too long")

// readLine reads one line with its '\n'. At the end of the file it
// returns what is left with io.EOF; a line longer than maxRecord is
// consumed up to its end and reported as errLineTooLong.
func readLine(r *bufio.Reader) ([]byte, error) {
	var line []byte
	tooLong := false
	for {
		chunk, err := r.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(chunk) > maxRecord {
				tooLong, line = true, append(line[:0], 'x')
			} else {
				line = append(line, chunk...)
			}
		}
		switch {
		case err == nil:
			if tooLong {
				return line, errLineTooLong
			}
			return line, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			if tooLong && err == io.EOF {
				return line, errLineTooLong
			}
			return line, err
		}
	}
}

// checkLine verifies one complete line and returns its JSON payload, or a
// reason why it is damaged.
func checkLine(line []byte) ([]byte, string) {
	if len(line) < 11 || line[8] != ' ' || line[len(line)-1] != '\n' {
		return nil, "malformed record"
	}
	want, err := strconv.ParseUint(string(line[:8]), 16, 32)
	if err != nil {
		return nil, "malformed checksum"
	}
	payload := line[9 : len(line)-1]
	if crc32.Checksum(payload, crcTable) != uint32(want) {
		return nil, "checksum mismatch"
	}
	return payload, ""
}

// countIntact counts the intact records in the rest of the file.
func countIntact(r *bufio.Reader) int {
	n := 0
	for {
		line, err := readLine(r)
		if err == nil {
			if _, reason := checkLine(line); reason == "" {
				n++
			}
			continue
		}
		if errors.Is(err, errLineTooLong) {
			continue
		}
		return n
	}
}

// append writes one record into the file (the page cache) and returns the
// offset a waitDurable must reach for it to be on stable storage.
func (w *wal) append(o *op) (int64, error) {
	w.mu.Lock()
	if err := w.err; err != nil {
		w.mu.Unlock()
		return 0, err
	}
	w.mu.Unlock()
	payload, err := json.Marshal(o)
	if err != nil {
		return 0, fmt.Errorf("%w: encode %s: %v", errWALFailed, o.Op, err)
	}
	w.buf = fmt.Appendf(w.buf[:0], "%08x ", crc32.Checksum(payload, crcTable))
	w.buf = append(w.buf, payload...)
	w.buf = append(w.buf, '\n')
	n, err := w.f.Write(w.buf)
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil {
		// A short write leaves a torn record, which the next start cuts.
		// This process does not write to the log again.
		w.setErr(fmt.Errorf("%w: write: %v", errWALFailed, err))
		return 0, w.err
	}
	w.written += int64(n)
	w.sinceRotateBytes += int64(n)
	if o.Op != opOpen {
		w.ops++
		w.sinceRotate++
	}
	select {
	case w.kick <- struct{}{}:
	default:
	}
	return w.written, nil
}

func (w *wal) setErr(err error) {
	if w.err == nil {
		w.err = err
		close(w.notify)
		w.notify = make(chan struct{})
	}
}

// position is the offset after the last appended record.
func (w *wal) position() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.written
}

// syncer is the group-commit loop: each fsync covers every record
// appended before it started.
func (w *wal) syncer() {
	defer close(w.stopped)
	for {
		select {
		case <-w.kick:
		case <-w.stop:
			w.syncOnce()
			return
		}
		w.syncOnce()
	}
}

func (w *wal) syncOnce() {
	w.fileMu.Lock()
	defer w.fileMu.Unlock()
	w.mu.Lock()
	target, done := w.written, w.synced >= w.written || w.err != nil
	w.mu.Unlock()
	if done {
		return
	}
	err := w.f.Sync()
	w.mu.Lock()
	if err != nil {
		// After a failed fsync the kernel may have dropped the dirty
		// pages; retrying could report success for data that is gone.
		w.setErr(fmt.Errorf("%w: fsync: %v", errWALFailed, err))
		w.mu.Unlock()
		return
	}
	if target > w.synced {
		w.synced = target
		close(w.notify)
		w.notify = make(chan struct{})
	}
	mark := lengthMark{Base: w.segBase, Bytes: w.synced - w.segStart}
	w.mu.Unlock()
	// The mark is written outside w.mu, so that appends do not wait for
	// it; fileMu keeps a rotation from changing the segment meanwhile.
	if time.Since(w.lastMark) >= markEvery {
		w.lastMark = time.Now()
		writeMark(w.dd, mark)
	}
}

// The length mark. A journal file cut short in the middle of its
// acknowledged records (a truncation, not a torn last write) looks like a
// torn last write: the file alone cannot tell. bursar.wal.len records, at
// most once a second and at close, the base of the live segment and how
// many of its bytes an fsync has covered; a start that finds the segment
// shorter than that refuses. The mark lags the journal, so it only ever
// understates what was durable.
const (
	markName  = "bursar.wal.len"
	markEvery = time.Second
)

type lengthMark struct {
	Base  int64 `json:"base"`
	Bytes int64 `json:"bytes"`
}

// markLocked writes the length mark at close (w.mu held). A failure is
// not fatal: the mark is a second line of defence.
func (w *wal) markLocked() {
	writeMark(w.dd, lengthMark{Base: w.segBase, Bytes: w.synced - w.segStart})
}

func writeMark(d *dataDir, m lengthMark) {
	b, _ := json.Marshal(m)
	_ = d.writeFile0600(markName, b)
}

// checkMark refuses a live segment shorter than its length mark says was
// durable.
func checkMark(d *dataDir, base, size int64) error {
	b, err := d.ReadFile(markName)
	if err != nil {
		return nil
	}
	var m lengthMark
	if json.Unmarshal(b, &m) != nil || m.Base != base || size >= m.Bytes {
		return nil
	}
	return fmt.Errorf("journal file %s is %d bytes long, but %d bytes of it had been made durable (%s): it was cut short "+
		"in the middle, and acknowledged operations are missing. Restore it from a backup; or, to start with what is left, "+
		"knowingly losing the rest: rm %s",
		d.join(walName), size, m.Bytes, markName, shellQuote(d.join(markName)))
}

// waitDurable blocks until an fsync has covered offset pos.
func (w *wal) waitDurable(ctx context.Context, pos int64) error {
	for {
		w.mu.Lock()
		if w.synced >= pos {
			w.mu.Unlock()
			return nil
		}
		if w.err != nil {
			err := w.err
			w.mu.Unlock()
			return err
		}
		ch := w.notify
		w.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// close makes everything appended durable and closes the file.
func (w *wal) close() error {
	var err error
	w.closeOnce.Do(func() {
		close(w.stop)
		<-w.stopped
		w.mu.Lock()
		err = w.err
		if err == nil && w.synced < w.written {
			err = fmt.Errorf("%w: not everything was synced at close", errWALFailed)
		}
		if err == nil {
			w.markLocked()
		}
		w.setErr(errors.New("journal file closed"))
		w.mu.Unlock()
		if cerr := w.f.Close(); err == nil && cerr != nil {
			err = cerr
		}
		w.lock.Close()
		w.dd.Close()
	})
	return err
}

// rotate seals the live segment as bursar.wal.old and starts a new one;
// it is called under the Service lock, so no append runs meanwhile. Every
// position handed out so far is covered by the fsync of the old segment
// here, and positions go on counting across the switch. A failure is
// sticky, as for a write: the service stops taking requests.
func (w *wal) rotate() error {
	w.fileMu.Lock()
	defer w.fileMu.Unlock()
	fail := func(err error) error {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.setErr(fmt.Errorf("%w: rotate: %v", errWALFailed, err))
		return w.err
	}
	if err := w.f.Sync(); err != nil {
		return fail(err)
	}
	w.mu.Lock()
	if w.err != nil {
		defer w.mu.Unlock()
		return w.err
	}
	if w.written > w.synced {
		w.synced = w.written
		close(w.notify)
		w.notify = make(chan struct{})
	}
	w.mu.Unlock()
	if err := w.dd.Rename(walName, walOldName); err != nil {
		return fail(err)
	}
	w.sealed.Store(true)
	nf, err := w.dd.OpenFile(walName, os.O_RDWR|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
	if err != nil {
		return fail(err)
	}
	old := w.f
	w.f = nf
	old.Close()
	w.sinceRotate, w.sinceRotateBytes = 0, 0
	if err := w.writeHeader(); err != nil {
		return fail(err)
	}
	return nil
}
