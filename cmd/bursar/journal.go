package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/bursar-hpc/bursar/service"
)

func journalCommand() *cli.Command {
	return &cli.Command{
		Name:  "journal",
		Usage: "inspect and repair a service's data directory",
		Subcommands: []*cli.Command{{
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
