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
			Usage: "cut the journal file after its first N records, knowingly losing what follows",
			Description: "When `bursar serve` finds a damaged complete record in its journal, it refuses to\n" +
				"start (that record's operation may have been acknowledged to an agent) and prints the\n" +
				"exact command to run, for example:\n\n" +
				"   bursar journal repair --data-dir ./bursar-data --cut-after 4711\n\n" +
				"which keeps records 1..4711 (record 1 is the header) and removes everything after them.\n" +
				"It refuses when a record to keep is itself damaged, and when a service holds the data\n" +
				"directory. Copy the directory first if you may want to look at the damage later.",
			Flags: []cli.Flag{
				&cli.PathFlag{Name: "data-dir", Required: true, EnvVars: []string{"BURSAR_DATA_DIR"}, Usage: "the service's data directory"},
				&cli.IntFlag{Name: "cut-after", Required: true, Usage: "records to keep, the header included"},
			},
			Action: func(c *cli.Context) error {
				if c.NArg() > 0 {
					return fmt.Errorf("journal repair takes no arguments, got %q", c.Args().Slice())
				}
				rep, err := service.RepairJournal(c.Path("data-dir"), c.Int("cut-after"))
				if err != nil {
					return err
				}
				if rep.CutBytes == 0 {
					fmt.Fprintf(c.App.Writer, "bursar: %s ends after record %d already; nothing cut\n", rep.Path, rep.Kept)
					return nil
				}
				fmt.Fprintf(c.App.Writer, "bursar: %s cut after record %d (offset %d): %d bytes removed, %d of them intact records\n",
					rep.Path, rep.Kept, rep.Offset, rep.CutBytes, rep.CutIntact)
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
		fmt.Fprintf(w, "leftover temporary file of an interrupted snapshot: %s\n", t)
	}
}
