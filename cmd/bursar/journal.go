package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/bursar-hpc/bursar/service"
)

func journalCommand() *cli.Command {
	return &cli.Command{
		Name:  "journal",
		Usage: "inspect and repair a service's data directory",
		Subcommands: []*cli.Command{{
			Name:  "inspect",
			Usage: "show what a data directory holds: the snapshot, the journal files, their last records and any damage",
			Description: "Reads the data directory without taking its lock, so it may run beside a live service.\n" +
				"For each file it says how many operations it holds, the broker time and wall-clock\n" +
				"times it reaches, and the first damaged record: where it is, whether intact records\n" +
				"follow it (damage in the middle) or not (a damaged tail), and the command that repairs it.",
			Flags: []cli.Flag{
				&cli.PathFlag{Name: "data-dir", Required: true, EnvVars: []string{"BURSAR_DATA_DIR"}, Usage: "the service's data directory"},
				&cli.IntFlag{Name: "records", Value: 5, Usage: "how many of the last records of each journal file to show"},
			},
			Action: func(c *cli.Context) error {
				if c.NArg() > 0 {
					return fmt.Errorf("journal inspect takes no arguments, got %q", c.Args().Slice())
				}
				if c.Int("records") < 0 {
					return fmt.Errorf("--records must not be negative, got %d", c.Int("records"))
				}
				ins, err := service.InspectDataDir(c.Path("data-dir"), c.Int("records"))
				if err != nil {
					return err
				}
				printInspection(c.App.Writer, ins)
				return nil
			},
		}, {
			Name:  "repair",
			Usage: "repair a data directory the service refuses to start from, knowingly (each mode backs up what it changes first)",
			Description: "When `bursar serve` refuses to start from its data directory, its message gives the exact\n" +
				"command to run. The modes:\n\n" +
				"   --cut-after N       keep the journal's first N records (record 1 is the header) and cut\n" +
				"                       the rest: for a damaged record, whose operation may have been\n" +
				"                       acknowledged (refused when a record to keep is itself damaged)\n" +
				"   --rewrite-header    rewrite a damaged header (record 1) from the broker flags and the\n" +
				"                       snapshot, keeping every record after it\n" +
				"   --new-journal       start an empty journal after the snapshot when bursar.wal is\n" +
				"                       missing or empty (what was acknowledged after the snapshot is lost)\n" +
				"   --snapshot          rebuild a damaged bursar.snap from the previous snapshot and the\n" +
				"                       journal segment kept with it (bursar.snap.prev, bursar.wal.prev)\n\n" +
				"The file changed is first copied to <file>.bak-<UTC time>. Every mode refuses while a\n" +
				"service holds the data directory. For example:\n\n" +
				"   bursar journal repair --data-dir ./bursar-data --cut-after 4711",
			Flags: append([]cli.Flag{
				&cli.PathFlag{Name: "data-dir", Required: true, EnvVars: []string{"BURSAR_DATA_DIR"}, Usage: "the service's data directory"},
				&cli.IntFlag{Name: "cut-after", Usage: "records to keep, the header included"},
				&cli.BoolFlag{Name: "rewrite-header", Usage: "rewrite the journal's damaged header from the broker flags"},
				&cli.BoolFlag{Name: "new-journal", Usage: "start an empty journal after the snapshot (bursar.wal missing or empty)"},
				&cli.BoolFlag{Name: "snapshot", Usage: "rebuild a damaged snapshot from the previous one and the segment kept with it"},
			}, brokerFlags()...),
			Action: func(c *cli.Context) error {
				if c.NArg() > 0 {
					return fmt.Errorf("journal repair takes no arguments, got %q", c.Args().Slice())
				}
				modes := 0
				for _, m := range []string{"cut-after", "rewrite-header", "new-journal", "snapshot"} {
					if c.IsSet(m) {
						modes++
					}
				}
				if modes != 1 {
					return fmt.Errorf("journal repair needs exactly one of --cut-after N, --rewrite-header, --new-journal and --snapshot")
				}
				dir := c.Path("data-dir")
				var rep service.RepairReport
				var err error
				switch {
				case c.Bool("rewrite-header"):
					rep, err = service.RewriteHeader(dir, brokerConfig(c))
					if err == nil {
						fmt.Fprintf(c.App.Writer, "bursar: %s: header rewritten, %d records kept (backup: %s)\n", rep.Path, rep.Kept, rep.Backup)
					}
					return err
				case c.Bool("new-journal"):
					rep, err = service.NewJournal(dir, brokerConfig(c))
					if err == nil {
						fmt.Fprintf(c.App.Writer, "bursar: %s: an empty journal after the snapshot\n", rep.Path)
					}
					return err
				case c.Bool("snapshot"):
					rep, err = service.RepairSnapshot(dir)
					if err == nil {
						fmt.Fprintf(c.App.Writer, "bursar: %s rebuilt from the previous snapshot and journal segment (the damaged one: %s)\n", rep.Path, rep.Backup)
					}
					return err
				}
				rep, err = service.RepairJournal(dir, c.Int("cut-after"))
				if err != nil {
					return err
				}
				if rep.CutBytes == 0 {
					fmt.Fprintf(c.App.Writer, "bursar: %s ends after record %d already; nothing cut\n", rep.Path, rep.Kept)
					return nil
				}
				fmt.Fprintf(c.App.Writer, "bursar: %s cut after record %d (offset %d): %d bytes removed, %d of them intact records (backup: %s)\n",
					rep.Path, rep.Kept, rep.Offset, rep.CutBytes, rep.CutIntact, rep.Backup)
				return nil
			},
		}},
	}
}

// printInspection writes what InspectDataDir found, for people.
func printInspection(w io.Writer, ins service.Inspection) {
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
		fmt.Fprintf(w, "snapshot %s (%d bytes): DAMAGED: %s\n", sn.Path, sn.Bytes, sn.Damage)
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
		case seg.Damage == "":
			fmt.Fprintf(w, "  intact to the end\n")
		case seg.IntactAfter > 0:
			fmt.Fprintf(w, "  DAMAGED record %d at offset %d (%s), followed by %d intact records: damage in the middle, not a torn write.\n"+
				"  The service refuses to start. To keep records 1..%d and lose the rest knowingly (copy the directory first):\n"+
				"    bursar journal repair --data-dir %s --cut-after %d\n",
				seg.DamageRecord, seg.DamageOffset, seg.Damage, seg.IntactAfter, seg.DamageRecord-1, shellArg(ins.Dir), seg.DamageRecord-1)
		case seg.Torn:
			fmt.Fprintf(w, "  torn last record %d at offset %d (a write cut short, never acknowledged): the service cuts it at start\n", seg.DamageRecord, seg.DamageOffset)
		default:
			fmt.Fprintf(w, "  DAMAGED last record %d at offset %d (%s): the service refuses to start; to cut it knowingly:\n"+
				"    bursar journal repair --data-dir %s --cut-after %d\n", seg.DamageRecord, seg.DamageOffset, seg.Damage, shellArg(ins.Dir), seg.DamageRecord-1)
		}
	}
	for _, t := range ins.Temps {
		fmt.Fprintf(w, "leftover temporary file of an interrupted write (removed at the next start): %s\n", t)
	}
}
