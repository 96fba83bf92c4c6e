package service

import (
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Report writes what InspectDataDir found, for people (`bursar journal
// inspect`): each file, what it holds, and for a damaged record the
// command that repairs it.
func (ins Inspection) Report(w io.Writer) {
	wall := func(ms int64) string {
		if ms == 0 {
			return "-"
		}
		return time.UnixMilli(ms).UTC().Format("2006-01-02 15:04:05.000Z")
	}
	fmt.Fprintf(w, "data dir %s\n", ins.Dir)
	if sn := ins.Snapshot; sn == nil {
		fmt.Fprintf(w, "snapshot: none\n")
	} else if sn.Damage != "" {
		fmt.Fprintf(w, "snapshot %s (%d bytes): DAMAGED: %s\n  The service refuses to start. %s\n", sn.Path, sn.Bytes, sn.Damage, ins.snapshotFix())
	} else {
		fmt.Fprintf(w, "snapshot %s (%d bytes): %d operations, %d campaigns, broker time %d\n", sn.Path, sn.Bytes, sn.Covers, sn.Campaigns, sn.Time)
	}
	if len(ins.Segments) == 0 {
		fmt.Fprintf(w, "journal: none\n")
	}
	for _, seg := range ins.Segments {
		total := 0
		var ops []string
		for _, k := range slices.Sorted(maps.Keys(seg.Records)) {
			total += seg.Records[k]
			ops = append(ops, fmt.Sprintf("%s %d", k, seg.Records[k]))
		}
		fmt.Fprintf(w, "journal %s (%d bytes): operations %d..%d (%d records after the header", seg.Path, seg.Bytes, seg.Base+1, seg.Base+int64(total), total)
		if len(ops) > 0 {
			fmt.Fprintf(w, ": %s", strings.Join(ops, ", "))
		}
		fmt.Fprintf(w, "), broker time %d, wall %s .. %s\n", seg.LastT, wall(seg.FirstWall), wall(seg.LastWall))
		for _, r := range seg.Last {
			fmt.Fprintf(w, "  %s\n", r)
		}
		switch {
		case seg.Durable > 0:
			fmt.Fprintf(w, "  SHORTENED: %d bytes, but %d had been made durable (%s): cut short, not torn; acknowledged operations are missing.\n"+
				"  The service refuses to start. Restore it from a backup; or, to start with what is left, knowingly losing the rest:\n"+
				"    rm %s\n", seg.Bytes, seg.Durable, markName, ShellQuote(filepath.Join(ins.Dir, markName)))
		case seg.Damage == "":
			fmt.Fprintf(w, "  intact to the end\n")
		case seg.IntactAfter > 0:
			fmt.Fprintf(w, "  DAMAGED record %d at offset %d (%s), followed by %d intact records: damage in the middle, not a torn write.\n"+
				"  The service refuses to start. To keep records 1..%d and lose the rest knowingly (copy the directory first):\n"+
				"    bursar journal repair --data-dir %s --cut-after %d\n",
				seg.DamageRecord, seg.DamageOffset, seg.Damage, seg.IntactAfter, seg.DamageRecord-1, ShellQuote(ins.Dir), seg.DamageRecord-1)
		case seg.Torn:
			fmt.Fprintf(w, "  torn last record %d at offset %d (a write cut short, never acknowledged): the service cuts it at start\n", seg.DamageRecord, seg.DamageOffset)
		default:
			fmt.Fprintf(w, "  DAMAGED last record %d at offset %d (%s): the service refuses to start; to cut it knowingly:\n"+
				"    bursar journal repair --data-dir %s --cut-after %d\n", seg.DamageRecord, seg.DamageOffset, seg.Damage, ShellQuote(ins.Dir), seg.DamageRecord-1)
		}
	}
	if sn := ins.PrevSnapshot; sn != nil && sn.Damage != "" {
		fmt.Fprintf(w, "kept previous snapshot %s: DAMAGED: %s (only a damaged snapshot is rebuilt from it)\n", sn.Path, sn.Damage)
	}
	if seg := ins.PrevSegment; seg != nil {
		state := "intact"
		if seg.Damage != "" {
			state = fmt.Sprintf("DAMAGED at record %d, offset %d (%s)", seg.DamageRecord, seg.DamageOffset, seg.Damage)
		}
		fmt.Fprintf(w, "kept segment %s (%d bytes, operations from %d): %s; the service never reads it, only a damaged snapshot is rebuilt from it\n",
			seg.Path, seg.Bytes, seg.Base+1, state)
	}
	for _, t := range ins.Temps {
		fmt.Fprintf(w, "leftover temporary file of an interrupted write (removed at the next start): %s\n", t)
	}
}

// snapshotFix says how a damaged snapshot is repaired: rebuilt from the
// kept previous snapshot and segment when both are sound, else restored
// from a backup.
func (ins Inspection) snapshotFix() string {
	dir := ShellQuote(ins.Dir)
	switch {
	case ins.PrevSegment == nil:
		return "No segment was kept to rebuild it from (" + walPrevName + "): restore " + snapName + " from a backup."
	case ins.PrevSegment.Damage != "":
		return "The kept segment " + walPrevName + " is damaged too, so the snapshot cannot be rebuilt: restore " + snapName +
			" (or " + walPrevName + ") from a backup, then: bursar journal repair --data-dir " + dir + " --snapshot" +
			". Without a backup, rebuild it from what is intact and lose everything acknowledged from record " +
			strconv.Itoa(ins.PrevSegment.DamageRecord) + " of " + walPrevName + " on (the live journal included; each file is backed up first): " +
			"bursar journal repair --data-dir " + dir + " --snapshot-with-loss"
	case ins.PrevSnapshot != nil && ins.PrevSnapshot.Damage != "":
		return "The kept previous snapshot " + snapPrevName + " is damaged too, so the snapshot cannot be rebuilt: restore " + snapName +
			" (or " + snapPrevName + ") from a backup, then: bursar journal repair --data-dir " + dir + " --snapshot"
	}
	return "To rebuild it from " + snapPrevName + " and " + walPrevName + " (a backup is made first): bursar journal repair --data-dir " + dir + " --snapshot"
}

// ShellQuote quotes a path for a command line when it needs it (the
// repair commands this package and cmd/bursar print).
func ShellQuote(p string) string {
	if p != "" && strings.Trim(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+=:,@") == "" {
		return p
	}
	return "'" + strings.ReplaceAll(p, "'", `'\''`) + "'"
}
