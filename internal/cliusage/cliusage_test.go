package cliusage

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/urfave/cli/v2"
)

func testApp(out *bytes.Buffer) *cli.App {
	app := &cli.App{
		Name:      "prog",
		Writer:    out,
		ErrWriter: out,
		Commands: []*cli.Command{
			{Name: "paper", Action: func(*cli.Context) error { return nil }, Flags: []cli.Flag{
				&cli.BoolFlag{Name: "quick", Usage: "the quick variant"},
				&cli.IntFlag{Name: "workers", Usage: "`N` runs at once"},
				&cli.Float64Flag{Name: "grace", Usage: "grace period, s"},
				&cli.StringFlag{Name: "out", Usage: "output `FOLDER`"},
				&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}},
			}},
			{Name: "sweep", Action: func(*cli.Context) error { return nil }},
		},
	}
	Apply(app)
	return app
}

func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"paprr"}, `unknown command "paprr"; did you mean "paper"? (commands: paper, sweep; prog --help explains them)`},
		{[]string{"zzzzzzzzzz"}, `unknown command "zzzzzzzzzz" (commands: paper, sweep; prog --help explains them)`},
		{[]string{"paper", "--quik"}, `paper: unknown flag --quik; did you mean --quick? (prog paper --help lists the flags)`},
		{[]string{"paper", "--work", "2"}, `paper: unknown flag --work; did you mean --workers? (prog paper --help lists the flags)`},
		{[]string{"paper", "--xyzzy-plugh"}, `paper: unknown flag --xyzzy-plugh (prog paper --help lists the flags)`},
		{[]string{"paper", "--workers", "abc"}, `paper: --workers "abc" is not an integer — N runs at once (prog paper --help lists the flags)`},
		{[]string{"paper", "--grace", "soon"}, `paper: --grace "soon" is not a number — grace period, s (prog paper --help lists the flags)`},
		{[]string{"paper", "--quick=maybe"}, `paper: --quick "maybe" is not true or false — the quick variant (prog paper --help lists the flags)`},
		{[]string{"paper", "--out"}, `paper: --out needs a value: a text value — output FOLDER (prog paper --help lists the flags)`},
	} {
		var out bytes.Buffer
		err := testApp(&out).Run(append([]string{"prog"}, tc.args...))
		require.EqualError(t, err, tc.want, tc.args)
		require.NotContains(t, out.String(), "USAGE", "no help dump for %v", tc.args)
	}
}

func TestNoArgumentsShowsHelp(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, testApp(&out).Run([]string{"prog"}))
	require.Contains(t, out.String(), "USAGE")
}

func TestGoodInputStillRuns(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, testApp(&out).Run([]string{"prog", "paper", "--quick", "-q", "--workers", "3", "--out", "x"}))
	require.NoError(t, testApp(&out).Run([]string{"prog", "help", "paper"}))
	require.Contains(t, out.String(), "--workers")
}

func TestEditDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		d    int
	}{{"", "", 0}, {"abc", "", 3}, {"kitten", "sitting", 3}, {"quik", "quick", 1}, {"flaw", "lawn", 2}} {
		require.Equal(t, tc.d, editDistance(tc.a, tc.b), "%q %q", tc.a, tc.b)
		require.Equal(t, tc.d, editDistance(tc.b, tc.a), "%q %q", tc.b, tc.a)
	}
}

// FuzzUsageError: whatever the flag parser says, the rewritten error names
// the command and where the help is, and never panics.
func FuzzUsageError(f *testing.F) {
	for _, s := range []string{
		"flag provided but not defined: -quik",
		`invalid value "abc" for flag -workers: parse error`,
		`invalid boolean value "x" for -quick: parse error`,
		"flag needs an argument: -out",
		"bad flag syntax: ---x",
		"",
	} {
		f.Add(s)
	}
	flags := []cli.Flag{&cli.IntFlag{Name: "workers"}, &cli.BoolFlag{Name: "quick", Aliases: []string{"q"}}}
	f.Fuzz(func(t *testing.T, msg string) {
		err := usageError("paper", "prog paper", flags, errorString(msg))
		require.Contains(t, err.Error(), "paper: ")
		require.Contains(t, err.Error(), "(prog paper --help lists the flags)")
		_ = nearest(msg, []string{"workers", "quick", "q", ""})
	})
}

type errorString string

func (e errorString) Error() string { return string(e) }
