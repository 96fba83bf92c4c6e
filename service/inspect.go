package service

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// Inspection is what a data directory holds, as `bursar journal inspect`
// shows it: read only, without the lock, so it may run beside a live
// service (which only ever appends, and renames files whole).
type Inspection struct {
	Dir string
	// Snapshot is nil when there is none.
	Snapshot *SnapshotInfo
	// Segments are the sealed segment (bursar.wal.old, when a snapshot
	// was interrupted) and the live journal, in replay order.
	Segments []SegmentInfo
	// Kept are the previous snapshot and the segment from it to the
	// current one (bursar.snap.prev, bursar.wal.prev): the service never
	// reads them; `journal repair --snapshot` rebuilds a damaged snapshot
	// from them.
	PrevSnapshot *SnapshotInfo
	PrevSegment  *SegmentInfo
	// Temps are leftover temporary files of interrupted snapshot writes.
	Temps []string
}

// SnapshotInfo describes bursar.snap.
type SnapshotInfo struct {
	Path  string
	Bytes int64
	// Covers is the operations its header says it holds; Time the broker
	// time after its last tick; Campaigns the registrations in it.
	Covers    int64
	Time      int
	Campaigns int
	// Damage says why the snapshot cannot be loaded ("" when it can).
	Damage string
}

// SegmentInfo describes one journal file.
type SegmentInfo struct {
	Path  string
	Bytes int64
	// Base is the operations before the segment's first record.
	Base int64
	// Records counts the intact records after the header, by operation.
	Records map[string]int
	// FirstWall and LastWall bound the wall-clock times (UTC Unix ms)
	// the records carry (0: none carries one); LastT is the broker time
	// of the last intact record.
	FirstWall, LastWall int64
	LastT               int
	// Last holds the last records (their JSON), oldest first.
	Last []string
	// Damage describes the first damaged record ("" when none):
	// DamageRecord is its number (the header is 1), DamageOffset where
	// it starts, IntactAfter how many intact records follow it (0: a
	// damaged tail), Torn whether it looks like a write cut short.
	Damage       string
	DamageRecord int
	DamageOffset int64
	IntactAfter  int
	Torn         bool
	// Durable is, for the live journal, the length its mark says had been
	// made durable when it is longer than the file: the file was cut
	// short, and the service refuses it whatever its tail looks like
	// (checkMark); 0 otherwise.
	Durable int64
}

// InspectDataDir reads a data directory, keeping the last `last` records
// of each journal file.
func InspectDataDir(dir string, last int) (Inspection, error) {
	ins := Inspection{Dir: dir}
	st, err := os.Stat(dir)
	if err != nil {
		return ins, fmt.Errorf("data dir: %w", err)
	}
	if !st.IsDir() {
		return ins, fmt.Errorf("data dir %s is not a directory", dir)
	}
	// Read through the directory, following no link, but without the
	// ownership checks: inspecting changes nothing.
	d, err := openDataDir(dir, false, false)
	if err != nil {
		return ins, err
	}
	defer d.Close()
	if sn, err := inspectSnapshot(d, snapName); err != nil {
		return ins, err
	} else {
		ins.Snapshot = sn
	}
	for _, name := range []string{walOldName, walName} {
		seg, err := inspectSegment(d, name, last)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return ins, err
		}
		if name == walName {
			if b, err := d.ReadFile(markName); err == nil {
				var m lengthMark
				if json.Unmarshal(b, &m) == nil && m.Base == seg.Base && seg.Bytes < m.Bytes {
					seg.Durable = m.Bytes
				}
			}
		}
		ins.Segments = append(ins.Segments, seg)
	}
	if sn, err := inspectSnapshot(d, snapPrevName); err != nil {
		return ins, err
	} else {
		ins.PrevSnapshot = sn
	}
	if seg, err := inspectSegment(d, walPrevName, 0); err == nil {
		ins.PrevSegment = &seg
	} else if !errors.Is(err, os.ErrNotExist) {
		return ins, err
	}
	for _, name := range tempNames {
		for _, n := range d.Glob("." + name + ".tmp-*") {
			ins.Temps = append(ins.Temps, d.join(n))
		}
	}
	return ins, nil
}

func inspectSnapshot(d *dataDir, name string) (*SnapshotInfo, error) {
	path := d.join(name)
	data, err := d.ReadFile(name)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	sn := &SnapshotInfo{Path: path, Bytes: int64(len(data))}
	body, err := checkSnapshot(data)
	if err != nil {
		sn.Damage = err.Error()
		return sn, nil
	}
	line := 0
	for len(body) > 0 {
		i := bytes.IndexByte(body, '\n')
		rec := body[:i]
		body = body[i+1:]
		line++
		var o op
		if err := json.Unmarshal(rec, &o); err != nil {
			sn.Damage = fmt.Sprintf("line %d does not decode: %v", line, err)
			return sn, nil
		}
		switch {
		case line == 1:
			sn.Covers = o.Base
		case o.Op == opTick || o.Op == opTicks:
			sn.Time = o.T
		case o.Op == opRegister:
			sn.Campaigns++
		case o.Op == opState && o.State != nil:
			sn.Time, sn.Campaigns = o.T, len(o.State.Campaigns)
		}
	}
	return sn, nil
}

func inspectSegment(d *dataDir, name string, last int) (SegmentInfo, error) {
	seg := SegmentInfo{Path: d.join(name), Records: map[string]int{}}
	f, err := d.Open(name)
	if err != nil {
		return seg, err
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil {
		seg.Bytes = st.Size()
	}
	r := bufio.NewReaderSize(f, 64<<10)
	var off int64
	for n := 1; ; n++ {
		line, rerr := readLine(r)
		if len(line) == 0 && rerr == io.EOF {
			return seg, nil
		}
		var payload []byte
		reason := ""
		switch {
		case errors.Is(rerr, errLineTooLong):
			reason = "record longer than 1 MiB"
		case rerr == io.EOF:
			reason, seg.Torn = "no end of line", looksTorn(line)
		case rerr != nil:
			return seg, fmt.Errorf("journal file %s: %w", seg.Path, rerr)
		default:
			payload, reason = checkLine(line)
		}
		var o op
		if reason == "" {
			if err := json.Unmarshal(payload, &o); err != nil {
				reason = fmt.Sprintf("valid checksum but does not decode: %v", err)
			}
		}
		if reason != "" {
			seg.Damage, seg.DamageRecord, seg.DamageOffset = reason, n, off
			seg.IntactAfter = countIntact(r)
			return seg, nil
		}
		off += int64(len(line))
		if n == 1 {
			seg.Base = o.Base
			continue
		}
		seg.Records[o.Op]++
		seg.LastT = o.T
		if o.Wall != 0 {
			if seg.FirstWall == 0 {
				seg.FirstWall = o.Wall
			}
			seg.LastWall = o.Wall
		}
		if last > 0 {
			rec := strings.TrimSpace(string(payload))
			if len(seg.Last) < last {
				seg.Last = append(seg.Last, rec)
			} else {
				copy(seg.Last, seg.Last[1:])
				seg.Last[last-1] = rec
			}
		}
	}
}
