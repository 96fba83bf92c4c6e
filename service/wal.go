package service

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"

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
	walName    = "bursar.wal"
	walVersion = 1
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
	path string

	mu      sync.Mutex
	written int64         // offset after the last appended record
	synced  int64         // offset up to which an fsync has completed
	err     error         // sticky: after a failed write or fsync nothing is trusted
	notify  chan struct{} // closed (and replaced) whenever synced or err changes

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
	// Records is the number of operations replayed, by operation name.
	Records map[string]int
	// Time is the broker time after replay.
	Time int
	// CutOffset, CutBytes and CutReason describe a damaged tail that was
	// cut off (CutBytes 0: nothing was cut).
	CutOffset int64
	CutBytes  int64
	CutReason string
}

// errWALFailed wraps every write or fsync failure.
var errWALFailed = errors.New("journal file failed")

// openWAL opens (or creates) the journal file in dir, replays every
// record through apply, cuts a damaged tail and returns the log ready for
// appending. A record that is intact but cannot be applied, or damage
// followed by intact records, is an error: cutting there would throw away
// operations that were acknowledged.
func openWAL(dir string, cfg policy.Config, apply func(*op) error) (*wal, ReplayReport, error) {
	rep := ReplayReport{Records: map[string]int{}}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, rep, fmt.Errorf("data dir: %w", err)
	}
	path := filepath.Join(dir, walName)
	rep.Path = path
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, rep, fmt.Errorf("journal file: %w", err)
	}
	fail := func(err error) (*wal, ReplayReport, error) {
		f.Close()
		return nil, rep, err
	}
	if err := lockFile(f); err != nil {
		return fail(fmt.Errorf("journal file %s is in use by another process: %w", path, err))
	}

	good, err := replayFile(f, cfg, apply, &rep)
	if err != nil {
		return fail(fmt.Errorf("journal file %s: %w", path, err))
	}
	st, err := f.Stat()
	if err != nil {
		return fail(fmt.Errorf("journal file: %w", err))
	}
	if st.Size() > good {
		rep.CutOffset, rep.CutBytes = good, st.Size()-good
		if err := f.Truncate(good); err != nil {
			return fail(fmt.Errorf("journal file: cut damaged tail: %w", err))
		}
		if err := f.Sync(); err != nil {
			return fail(fmt.Errorf("journal file: %w", err))
		}
	}
	w := &wal{f: f, path: path, written: good, synced: good,
		notify: make(chan struct{}), kick: make(chan struct{}, 1),
		stop: make(chan struct{}), stopped: make(chan struct{})}
	if good == 0 {
		rep.Created = true
		if _, err := w.append(&op{Op: opOpen, Version: walVersion, Config: &cfg}); err != nil {
			return fail(err)
		}
		if err := f.Sync(); err != nil {
			return fail(fmt.Errorf("journal file: %w", err))
		}
		w.synced = w.written
		// The file is new: its directory entry must be durable too.
		if d, err := os.Open(dir); err == nil {
			_ = d.Sync()
			d.Close()
		}
	}
	go w.syncer()
	return w, rep, nil
}

// replayFile applies every intact record and returns the offset after the
// last one. Damage is tolerated only at the tail.
func replayFile(f *os.File, cfg policy.Config, apply func(*op) error, rep *ReplayReport) (int64, error) {
	r := bufio.NewReaderSize(f, 64<<10)
	var off int64
	first := true
	for {
		line, rerr := readLine(r)
		if len(line) == 0 && rerr == io.EOF {
			return off, nil
		}
		var o *op
		reason := ""
		switch {
		case errors.Is(rerr, errLineTooLong):
			reason = "record longer than 1 MiB"
		case rerr == io.EOF:
			reason = "torn record (no end of line)"
		case rerr != nil:
			return off, rerr
		default:
			var payload []byte
			payload, reason = checkLine(line)
			if reason == "" {
				o = new(op)
				if err := json.Unmarshal(payload, o); err != nil {
					return off, fmt.Errorf("record at offset %d has a valid checksum but does not decode (%v); refusing to cut acknowledged records", off, err)
				}
			}
		}
		if o == nil {
			rep.CutReason = fmt.Sprintf("%s at offset %d", reason, off)
			if n := countIntact(r); n > 0 {
				return off, fmt.Errorf("damaged record at offset %d (%s) is followed by %d intact records; "+
					"refusing to cut acknowledged records (to accept the loss: truncate -s %d %s)", off, reason, n, off, walName)
			}
			return off, nil
		}
		if first {
			if o.Op != opOpen {
				return off, fmt.Errorf("not a bursar journal: first record is %q, want %q", o.Op, opOpen)
			}
			if o.Version != walVersion {
				return off, fmt.Errorf("journal format version %d, this build reads %d", o.Version, walVersion)
			}
			if err := sameConfig(o, cfg); err != nil {
				return off, err
			}
			first = false
		} else {
			if err := apply(o); err != nil {
				return off, fmt.Errorf("record at offset %d (%s at t=%d) does not replay: %w", off, o.Op, o.T, err)
			}
			rep.Records[o.Op]++
		}
		off += int64(len(line))
	}
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
	w.mu.Lock()
	target, done := w.written, w.synced >= w.written || w.err != nil
	w.mu.Unlock()
	if done {
		return
	}
	err := w.f.Sync()
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil {
		// After a failed fsync the kernel may have dropped the dirty
		// pages; retrying could report success for data that is gone.
		w.setErr(fmt.Errorf("%w: fsync: %v", errWALFailed, err))
		return
	}
	if target > w.synced {
		w.synced = target
		close(w.notify)
		w.notify = make(chan struct{})
	}
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
		w.setErr(errors.New("journal file closed"))
		w.mu.Unlock()
		if cerr := w.f.Close(); err == nil && cerr != nil {
			err = cerr
		}
	})
	return err
}
