package main

import (
	"fmt"
	"strings"

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
				ins.Report(c.App.Writer)
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
				"                       journal segment kept with it (bursar.snap.prev, bursar.wal.prev)\n" +
				"   --snapshot-with-loss\n" +
				"                       when bursar.wal.prev is damaged too and no backup is at hand: rebuild\n" +
				"                       the snapshot from what is intact, start an empty journal, and lose\n" +
				"                       everything acknowledged after the damaged record (backups first)\n\n" +
				"The file changed is first copied to <file>.bak-<UTC time>. Every mode refuses while a\n" +
				"service holds the data directory. For example:\n\n" +
				"   bursar journal repair --data-dir ./bursar-data --cut-after 4711",
			Flags: append([]cli.Flag{
				&cli.PathFlag{Name: "data-dir", Required: true, EnvVars: []string{"BURSAR_DATA_DIR"}, Usage: "the service's data directory"},
				&cli.IntFlag{Name: "cut-after", Usage: "records to keep, the header included"},
				&cli.BoolFlag{Name: "rewrite-header", Usage: "rewrite the journal's damaged header from the broker flags"},
				&cli.BoolFlag{Name: "new-journal", Usage: "start an empty journal after the snapshot (bursar.wal missing or empty)"},
				&cli.BoolFlag{Name: "snapshot", Usage: "rebuild a damaged snapshot from the previous one and the segment kept with it"},
				&cli.BoolFlag{Name: "snapshot-with-loss", Usage: "rebuild a damaged snapshot when the kept segment is damaged too, losing what came after its damage"},
			}, brokerFlags()...),
			Action: func(c *cli.Context) error {
				if c.NArg() > 0 {
					return fmt.Errorf("journal repair takes no arguments, got %q", c.Args().Slice())
				}
				modes := 0
				for _, m := range []string{"cut-after", "rewrite-header", "new-journal", "snapshot", "snapshot-with-loss"} {
					if c.IsSet(m) {
						modes++
					}
				}
				if modes != 1 {
					return fmt.Errorf("journal repair needs exactly one of --cut-after N, --rewrite-header, --new-journal, --snapshot and --snapshot-with-loss")
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
				case c.Bool("snapshot-with-loss"):
					loss, err := service.RebuildSnapshotWithLoss(dir)
					if err == nil {
						fmt.Fprintf(c.App.Writer, "bursar: %s rebuilt from what was intact; lost: %d records of bursar.wal.prev from record %d on, "+
							"and %d of the live journal; an empty journal follows the snapshot (backups: %s)\n",
							loss.Path, loss.LostPrev, loss.FromRecord, loss.LostLive, strings.Join(loss.Backups, ", "))
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
