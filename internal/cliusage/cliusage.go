package cliusage

import (
	"fmt"
	"github.com/xrash/smetrics"
	"regexp"
	"strings"

	"github.com/urfave/cli/v2"
)

// Apply installs the manners on app and every command under it. Call it
// once the commands are in place. Suggest is set too, for the places
// urfave/cli suggests by itself (help topics, shell completion).
func Apply(app *cli.App) {
	app.Suggest = true
	app.OnUsageError = func(c *cli.Context, err error, _ bool) error {
		return usageError(app.Name, app.Name, app.Flags, err)
	}
	if app.Action == nil {
		app.Action = func(c *cli.Context) error {
			if c.NArg() == 0 {
				return cli.ShowAppHelp(c)
			}
			return unknownCommand(app, c.Args().First())
		}
	}
	var walk func(prefix string, cmds []*cli.Command)
	walk = func(prefix string, cmds []*cli.Command) {
		for _, cmd := range cmds {
			label := strings.TrimPrefix(prefix+" "+cmd.Name, " ")
			if cmd.OnUsageError == nil {
				flags := cmd.Flags
				cmd.OnUsageError = func(c *cli.Context, err error, _ bool) error {
					return usageError(label, app.Name+" "+label, flags, err)
				}
			}
			walk(label, cmd.Subcommands)
		}
	}
	walk("", app.Commands)
}

// unknownCommand names the nearest command.
func unknownCommand(app *cli.App, got string) error {
	var names []string
	for _, cmd := range app.Commands {
		if !cmd.Hidden && cmd.Name != "help" {
			names = append(names, cmd.Name)
		}
	}
	msg := fmt.Sprintf("unknown command %q", got)
	if near := nearest(got, names); near != "" {
		msg += fmt.Sprintf("; did you mean %q?", near)
	}
	return fmt.Errorf("%s (commands: %s; %s --help explains them)", msg, strings.Join(names, ", "), app.Name)
}

// DidYouMean is `; did you mean "NAME"?` for the name nearest got (the
// same rule as for commands and flags), or "" when none is close: for
// values that name something, such as an admission policy.
func DidYouMean(got string, names []string) string {
	if near := nearest(got, names); near != "" {
		return fmt.Sprintf("; did you mean %q?", near)
	}
	return ""
}

// nearest is the name closest to got by edit distance, or "" when none is
// close enough to be a typo of it: at most 2 edits, or a third of the
// name's length, or got is the start of the name. Ties go to the first
// name listed.
func nearest(got string, names []string) string {
	best, bestD := "", -1
	for _, n := range names {
		d := editDistance(got, n)
		close := d <= 2 || 3*d <= len(n) || (len(got) >= 2 && strings.HasPrefix(n, got))
		if close && (bestD < 0 || d < bestD) {
			best, bestD = n, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b in bytes (names
// are ASCII), from smetrics' Wagner–Fischer with unit costs.
func editDistance(a, b string) int { return smetrics.WagnerFischer(a, b, 1, 1, 1) }

// The Go flag package's usage errors (urfave/cli v2 parses with it).
var (
	undefinedRE = regexp.MustCompile(`^flag provided but not defined: -+(.+)$`)
	invalidRE   = regexp.MustCompile(`^invalid (?:boolean )?value "(.*)" for (?:flag )?-+([^:]+): (.*)$`)
	needsArgRE  = regexp.MustCompile(`^flag needs an argument: -+(.+)$`)
)

// usageError rewrites a flag-parsing error of a command (label, e.g.
// "paper"; full, with the program name: "bursar-sweep paper") into one
// line that names the flag and says what to do. The program's main adds
// the program name in front.
func usageError(command, full string, flags []cli.Flag, err error) error {
	help := fmt.Sprintf("%s --help lists the flags", full)
	msg := err.Error()
	if m := undefinedRE.FindStringSubmatch(msg); m != nil {
		var names []string
		for _, f := range flags {
			names = append(names, f.Names()...)
		}
		out := fmt.Sprintf("%s: unknown flag %s", command, dashed(m[1]))
		if near := nearest(m[1], names); near != "" {
			out += fmt.Sprintf("; did you mean %s?", dashed(near))
		}
		return fmt.Errorf("%s (%s)", out, help)
	}
	if m := invalidRE.FindStringSubmatch(msg); m != nil {
		f := find(flags, m[2])
		return fmt.Errorf("%s: %s %q is not %s (%s)", command, dashed(m[2]), m[1], accepts(f), help)
	}
	if m := needsArgRE.FindStringSubmatch(msg); m != nil {
		f := find(flags, m[1])
		return fmt.Errorf("%s: %s needs a value: %s (%s)", command, dashed(m[1]), accepts(f), help)
	}
	return fmt.Errorf("%s: %w (%s)", command, err, help)
}

// dashed spells a flag as the help does: -q, --quick.
func dashed(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

func find(flags []cli.Flag, name string) cli.Flag {
	for _, f := range flags {
		for _, n := range f.Names() {
			if n == name {
				return f
			}
		}
	}
	return nil
}

// accepts says what a flag takes, with its usage text when it has one.
func accepts(f cli.Flag) string {
	what := "a valid value"
	switch f.(type) {
	case *cli.IntFlag, *cli.Int64Flag:
		what = "an integer"
	case *cli.UintFlag, *cli.Uint64Flag:
		what = "a non-negative integer"
	case *cli.Float64Flag:
		what = "a number"
	case *cli.BoolFlag:
		what = "true or false"
	case *cli.DurationFlag:
		what = "a duration such as 30s, 5m or 1h30m"
	case *cli.StringFlag, *cli.PathFlag, *cli.StringSliceFlag:
		what = "a text value"
	}
	if d, ok := f.(cli.DocGenerationFlag); ok && d.GetUsage() != "" {
		// The backquotes mark the placeholder name in --help.
		what += " — " + strings.ReplaceAll(d.GetUsage(), "`", "")
	}
	return what
}
