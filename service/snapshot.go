package service

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"

	"github.com/bursar-hpc/bursar/policy"
)

// Snapshots. A snapshot is the state after its first base operations as
// one "state" record (dump.go): the broker's dump and what the service
// keeps beside it. Loading it restores a fresh core to that state, which a
// full replay would have rebuilt (TestSnapshotReplayProperty checks it).
// Its size is set by the campaigns and the caps, not by the service's
// age (diskbound.go). Snapshots written before, operation histories with
// runs of ticks folded into one "ticks" record, load by replaying those
// operations.
//
// The file: one JSON operation per line, the first an "open" record whose
// base is the number of operations covered, and a last line
//
//	#end <crc32c of every byte before this line, 8 hex digits> <that many bytes>
//
// It is written to a temporary file, fsynced and renamed (atomicfile), so
// a reader sees the old snapshot or the new one, never a mix; the
// checksum catches damage after the fact, and a damaged snapshot stops the
// start (the journal behind it is gone, so there is nothing to fall back
// to that would not lose acknowledged operations).
//
// Making one: when SnapshotEvery records or SnapshotBytes bytes have been
// appended since the last rotation, the live segment is fsynced and
// renamed bursar.wal.old, a new bursar.wal starts whose header records
// how many operations precede it, and the state is copied under the lock.
// A goroutine then writes the copy as the new snapshot and moves
// bursar.wal.old aside (compactSteps). A crash anywhere in between leaves a
// state openWAL recovers: without the new snapshot the old one and
// bursar.wal.old are replayed, with it bursar.wal.old is skipped.

const (
	snapName    = "bursar.snap"
	snapTrailer = "#end "
)

// loadSnapshot applies the snapshot in dir, if there is one, and returns
// the number of operations it covers.
func loadSnapshot(d *dataDir, cfg policy.Config, apply func(*op) error) (int64, error) {
	return loadSnapshotAt(d, snapName, cfg, apply)
}

// loadSnapshotAt applies the snapshot named name (none: 0 operations).
func loadSnapshotAt(d *dataDir, name string, cfg policy.Config, apply func(*op) error) (int64, error) {
	path := d.join(name)
	data, err := d.ReadFile(name)
	if isNotExist(err) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("snapshot: %w", err)
	}
	body, err := checkSnapshot(data)
	if err != nil {
		fix := "restore it from a backup"
		if _, perr := d.Stat(walPrevName); perr == nil && name == snapName {
			fix = "rebuild it from the previous snapshot and the journal segment kept with it: bursar journal repair --data-dir " +
				shellQuote(d.path) + " --snapshot"
		}
		return 0, fmt.Errorf("snapshot %s: %w; the journal before it is not replayed without it, so the service will not start (%s)", path, err, fix)
	}
	var covers, ops int64
	line := 0
	for len(body) > 0 {
		i := bytes.IndexByte(body, '\n')
		rec := body[:i]
		body = body[i+1:]
		line++
		o := new(op)
		if err := json.Unmarshal(rec, o); err != nil {
			return 0, fmt.Errorf("snapshot %s line %d: %v", path, line, err)
		}
		if line == 1 {
			if err := checkHeader(o, cfg); err != nil {
				return 0, fmt.Errorf("snapshot %s: %w", path, err)
			}
			covers = o.Base
			continue
		}
		if err := apply(o); err != nil {
			return 0, fmt.Errorf("snapshot %s line %d (%s at t=%d) does not replay: %w", path, line, o.Op, o.T, err)
		}
		ops += opCount(o)
	}
	if line == 0 || ops != covers {
		return 0, fmt.Errorf("snapshot %s holds %d operations but its header says %d", path, ops, covers)
	}
	return covers, nil
}

// opCount is how many journal operations a snapshot record stands for.
func opCount(o *op) int64 {
	if o.Op == opTicks || o.Op == opState {
		return int64(o.N)
	}
	return 1
}

// checkSnapshot verifies the trailer and returns the records before it.
func checkSnapshot(data []byte) ([]byte, error) {
	if len(data) == 0 || data[len(data)-1] != '\n' {
		return nil, errors.New("no trailer (cut short)")
	}
	i := bytes.LastIndexByte(data[:len(data)-1], '\n') + 1
	trailer := string(data[i : len(data)-1])
	body := data[:i]
	var sum uint32
	var n int
	if _, err := fmt.Sscanf(trailer, snapTrailer+"%08x %d", &sum, &n); err != nil {
		return nil, fmt.Errorf("malformed trailer %q", capName(trailer))
	}
	if n != len(body) || crc32.Checksum(body, crcTable) != sum {
		return nil, errors.New("checksum mismatch")
	}
	return body, nil
}

// snapshotWriter folds operations into a snapshot: runs of ticks become one
// "ticks" record.
type snapshotWriter struct {
	w     *bufio.Writer
	crc   hash.Hash32
	n     int
	run   int   // ticks in the run not yet written
	runT  int   // time after the run
	runW  int64 // wall time of the run's last tick
	count int64
	err   error
}

func newSnapshotWriter(w io.Writer) *snapshotWriter {
	return &snapshotWriter{w: bufio.NewWriterSize(w, 256<<10), crc: crc32.New(crcTable)}
}

func (s *snapshotWriter) line(o *op) {
	if s.err != nil {
		return
	}
	b, err := json.Marshal(o)
	if err != nil {
		s.err = err
		return
	}
	b = append(b, '\n')
	s.crc.Write(b)
	s.n += len(b)
	_, s.err = s.w.Write(b)
}

func (s *snapshotWriter) flushRun() {
	switch {
	case s.run == 1:
		s.line(&op{Op: opTick, T: s.runT, Wall: s.runW})
	case s.run > 1:
		s.line(&op{Op: opTicks, T: s.runT, N: s.run, Wall: s.runW})
	}
	s.run = 0
}

// add appends one operation (a tick, a run of ticks or any other).
func (s *snapshotWriter) add(o *op) {
	s.count += opCount(o)
	switch o.Op {
	case opTick:
		s.run, s.runT, s.runW = s.run+1, o.T, o.Wall
		return
	case opTicks:
		s.run, s.runT, s.runW = s.run+o.N, o.T, o.Wall
		return
	}
	s.flushRun()
	s.line(o)
}

func (s *snapshotWriter) finish() error {
	s.flushRun()
	if s.err != nil {
		return s.err
	}
	if _, err := fmt.Fprintf(s.w, snapTrailer+"%08x %d\n", s.crc.Sum32(), s.n); err != nil {
		return err
	}
	return s.w.Flush()
}

// Names of what compaction keeps besides the snapshot: the previous
// snapshot and the journal segment between it and the current one, from
// which a damaged snapshot can be rebuilt (RepairSnapshot).
// tempNames are the files written through a temporary file.
var tempNames = []string{snapName, markName, walName}

// dataNames are every name the service keeps in the data directory; none
// may be a symbolic link (datadir.go).
var dataNames = []string{walName, walOldName, walPrevName, snapName, snapPrevName, markName, lockName}

const (
	snapPrevName = "bursar.snap.prev"
	walPrevName  = "bursar.wal.prev"
)

// compactSteps writes the snapshot of state, the state after the first base
// operations, which the sealed segment bursar.wal.old ends at. It touches
// no live state: state is the service's copy (core.dump, taken at the
// rotation). The snapshot it replaces becomes bursar.snap.prev and the
// sealed segment bursar.wal.prev: the last two snapshots are kept, with
// the segment that leads from one to the other. A crash between any two
// steps leaves a directory the next start reads (openWAL), which
// TestCompactionCrashPoints checks step by step.
//
// step, when set, is called before each step with its number: a test
// stops there as a crash would.
func compactSteps(d *dataDir, cfg policy.Config, state *coreDump, base int64, step func(int) bool) error {
	at := func(n int) bool { return step != nil && !step(n) }
	if at(1) {
		return errCrashed
	}
	if err := d.Remove(snapPrevName); err != nil && !isNotExist(err) {
		return fmt.Errorf("snapshot: %w", err)
	}
	if at(2) {
		return errCrashed
	}
	hadSnap := true
	if err := d.Link(snapName, snapPrevName); isNotExist(err) {
		hadSnap = false
	} else if err != nil {
		return fmt.Errorf("snapshot: keep the previous one: %w", err)
	}
	if at(3) {
		return errCrashed
	}
	if err := writeSnapshot(d, snapName, cfg, state, base); err != nil {
		return err
	}
	if at(4) {
		return errCrashed
	}
	if !hadSnap {
		// No previous snapshot: the kept segment starts at operation 1.
		_ = d.Remove(snapPrevName)
	}
	// The new snapshot must be durable before the segment it replaces
	// is moved aside.
	if err := d.Sync(); err != nil {
		return err
	}
	if at(5) {
		return errCrashed
	}
	if err := d.Rename(walOldName, walPrevName); err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	return d.Sync()
}

// errCrashed: a test stopped compaction as a crash would.
var errCrashed = errors.New("compaction stopped (test)")

// writeSnapshot writes the snapshot name: its header, covering base
// operations, and one state record.
func writeSnapshot(d *dataDir, name string, cfg policy.Config, state *coreDump, base int64) error {
	err := d.writeAtomic(name, func(w io.Writer) error {
		sw := newSnapshotWriter(w)
		sw.line(&op{Op: opOpen, Version: walVersion, Config: &cfg, Base: base})
		sw.line(&op{Op: opState, T: state.Broker.Now, N: int(base), State: state})
		return sw.finish()
	})
	if err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	return nil
}

// fold writes to out the snapshot of the snapshot snapIn (none: the
// empty history) followed by the journal segment segIn, all names in d:
// both are replayed onto a core with the default retention, whose state
// is written.
func fold(d *dataDir, snapIn, segIn, out string, cfg policy.Config) error {
	c, err := newCore(cfg, DefaultJournalKeep, DefaultCampaignJournalKeep, DefaultGrantKeep)
	if err != nil {
		return err
	}
	covers, err := loadSnapshotAt(d, snapIn, cfg, c.replayOne)
	if err != nil {
		return err
	}
	f, err := d.Open(segIn)
	if err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	rep := ReplayReport{Records: map[string]int{}}
	base, m, good, err := replaySegment(f, cfg, covers, c.replayOne, &rep, false, d.path)
	f.Close()
	if err != nil {
		return fmt.Errorf("snapshot: %s: %w", d.join(segIn), err)
	}
	if st, err := d.Stat(segIn); err != nil || st.Size() != good {
		return fmt.Errorf("snapshot: %s has a damaged tail", d.join(segIn))
	}
	return writeSnapshot(d, out, cfg, c.dump(), base+m)
}

// cleanTemps removes temporary files that interrupted writes left behind
// (snapshots, length marks, repairs: all named .<name>.tmp-*); nothing
// reads them, and the data directory's lock is held.
func cleanTemps(d *dataDir) []string {
	var removed []string
	for _, name := range tempNames {
		for _, n := range d.Glob("." + name + ".tmp-*") {
			if d.Remove(n) == nil {
				removed = append(removed, d.join(n))
			}
		}
	}
	return removed
}
