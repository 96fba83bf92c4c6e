package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/bursar-hpc/bursar/client"
	"github.com/bursar-hpc/bursar/service"
)

// `bursar campaign`: the administrator's side of a campaign's life —
// register it and hand its token over in a file, rotate or revoke that
// token, list what is registered. Every subcommand talks to a running
// service with the administrator token, read from --admin-token-file or
// $BURSAR_ADMIN_TOKEN as for serve; no token is ever printed.

func campaignCommand() *cli.Command {
	server := &cli.StringFlag{Name: "server", Value: "http://" + service.DefaultListen, EnvVars: []string{"BURSAR_SERVER"}, Usage: "the service's base URL"}
	tokenFileFlag := &cli.PathFlag{Name: "token-file", Usage: "write the campaign's token to this file, mode 0600 (default: NAME.token in the current directory)"}
	force := &cli.BoolFlag{Name: "force", Usage: "overwrite an existing token file"}
	return &cli.Command{
		Name:  "campaign",
		Usage: "register a campaign and manage its token (administrator)",
		Description: "Talks to a running 'bursar serve' with the administrator token (--admin-token-file or\n" +
			"$" + adminTokenEnv + "). The campaign's token goes into a file of mode 0600, never to the terminal:\n\n" +
			"   bursar campaign create sci --gpus 8 --rate 8 --bucket 28800 --admin-token-file admin.token\n" +
			"   BURSAR_TOKEN=$(cat sci.token) bursar lease --campaign sci --gpus 4 -- ./job.sh\n" +
			"   bursar campaign rotate sci --force      # a new token in sci.token; the old one is dead\n" +
			"   bursar campaign revoke sci              # no token reaches sci until a rotation",
		Subcommands: []*cli.Command{
			{
				Name:      "create",
				Usage:     "register a campaign and write its token file",
				ArgsUsage: "NAME",
				Description: "Registers campaign NAME with its envelope: --gpus guaranteed GPUs, a sustained rate\n" +
					"--rate R (GPUs) and a token bucket --bucket B (GPU-seconds) that lets it burst up to\n" +
					"--burst-ceiling GPUs until the bucket runs dry. The token is written to --token-file\n" +
					"(default NAME.token), mode 0600; an existing file is refused unless --force, checked\n" +
					"before registering so that no token is lost.",
				Flags: []cli.Flag{server, adminTokenFlag(), tokenFileFlag, force,
					&cli.IntFlag{Name: "gpus", Required: true, Usage: "GPUs guaranteed to the campaign (its share of the pool, on demand)"},
					&cli.Float64Flag{Name: "rate", Usage: "sustained rate R in GPUs: the token bucket's refill (default: --gpus)"},
					&cli.Float64Flag{Name: "bucket", Usage: "token bucket B in GPU-seconds (default: an hour at --burst-ceiling)"},
					&cli.IntFlag{Name: "burst-ceiling", Usage: "most GPUs held while the bucket has tokens (default: twice --gpus)"},
					&cli.Float64Flag{Name: "budget", Value: 1e6, Usage: "class-weighted GPU-hour credits"},
					&cli.StringFlag{Name: "class", Value: client.ClassAgentBurst, Usage: "default service class: deadline, interactive, agent-burst or opportunistic"},
				},
				Action: campaignCreate,
			},
			{
				Name:        "rotate",
				Usage:       "give a campaign a new token (the old one stops working) and write it to its token file",
				ArgsUsage:   "NAME",
				Description: "Also re-issues a token after 'revoke'. The file rule is create's: --force to overwrite.",
				Flags:       []cli.Flag{server, adminTokenFlag(), tokenFileFlag, force},
				Action:      campaignRotate,
			},
			{
				Name:      "revoke",
				Usage:     "revoke a campaign's token: no token reaches it until 'rotate'",
				ArgsUsage: "NAME",
				Flags:     []cli.Flag{server, adminTokenFlag()},
				Action:    campaignRevoke,
			},
			{
				Name:   "list",
				Usage:  "list the registered campaigns",
				Flags:  []cli.Flag{server, adminTokenFlag()},
				Action: campaignList,
			},
		},
	}
}

// adminClient builds the administrator's client from the flags.
func adminClient(c *cli.Context) (*client.Client, error) {
	tok, ok, err := adminToken(c, nil)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errors.New("no administrator token: give --admin-token-file or $" + adminTokenEnv)
	}
	return checkedClient(c.Context, c.String("server"), tok)
}

// checkedClient is a client of server with token tok, once server has
// answered /healthz (which takes no token) as a Bursar service does.
// Nothing with the token goes to another program that holds the address
// (a `bursar serve` that found its port busy exited; whatever held the
// port would otherwise get the administrator's token and the request).
func checkedClient(ctx context.Context, server, tok string) (*client.Client, error) {
	anon, err := client.New(server, "")
	if err != nil {
		return nil, err
	}
	hctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	h, err := anon.Health(hctx)
	if err == nil && h.Status != "ok" {
		err = fmt.Errorf("GET /healthz answered status %q", h.Status)
	}
	if err != nil {
		return nil, fmt.Errorf("no Bursar service answers at %s (%v); nothing was sent to it. Is `bursar serve` running there? "+
			"(it exits when its --listen address is busy: give it another one, and the same to --server or $BURSAR_SERVER)", server, err)
	}
	return anon.WithToken(tok), nil
}

// campaignName takes the one NAME argument.
func campaignName(c *cli.Context) (string, error) {
	if c.NArg() != 1 {
		return "", fmt.Errorf("%s takes one argument, the campaign's name; got %q", c.Command.Name, c.Args().Slice())
	}
	name := c.Args().First()
	if !namePattern.MatchString(name) {
		return "", fmt.Errorf("campaign name %q must match %s", name, client.NamePattern)
	}
	return name, nil
}

// tokenPath is where a campaign's token file goes, checked against
// overwriting before anything is registered.
func tokenPath(c *cli.Context, name string) (string, error) {
	path := c.Path("token-file")
	if path == "" {
		path = name + ".token"
	}
	if _, err := os.Lstat(path); err == nil && !c.Bool("force") {
		return "", fmt.Errorf("token file %s exists; pass --force to overwrite it, or --token-file elsewhere", path)
	}
	return path, nil
}

// writeTokenFile writes a token to path with mode 0600 from the first
// byte (never readable by others, not even for a moment), atomically;
// without force an existing file is not replaced.
func writeTokenFile(path, tok string, force bool) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("token file: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	if _, err := io.WriteString(f, tok+"\n"); err != nil {
		f.Close()
		return fmt.Errorf("token file: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("token file: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("token file: %w", err)
	}
	if force {
		err = os.Rename(tmp, path)
	} else {
		err = os.Link(tmp, path) // fails when path appeared meanwhile
	}
	if err != nil {
		return fmt.Errorf("token file: %w", err)
	}
	return nil
}

func campaignCreate(c *cli.Context) error {
	name, err := campaignName(c)
	if err != nil {
		return err
	}
	gpus := c.Int("gpus")
	if gpus < 0 {
		return fmt.Errorf("--gpus must not be negative, got %d", gpus)
	}
	burst := c.Int("burst-ceiling")
	if !c.IsSet("burst-ceiling") {
		burst = 2 * gpus
	}
	rate := c.Float64("rate")
	if !c.IsSet("rate") {
		rate = float64(gpus)
	}
	bucket := c.Float64("bucket")
	if !c.IsSet("bucket") {
		bucket = 3600 * float64(burst)
	}
	spec := client.CampaignSpec{Name: name, Budget: c.Float64("budget"), Guaranteed: gpus, Sustained: rate,
		BurstCeiling: burst, Bucket: bucket, Class: c.String("class")}
	var id int
	path, err := issueToken(c, name, func(ctx context.Context, admin *client.Client) (string, error) {
		reg, err := admin.Register(ctx, spec)
		if err != nil {
			return "", fmt.Errorf("register %s: %w", name, err)
		}
		id = reg.ID
		return reg.Token, nil
	}, func(path string, err error) error {
		return fmt.Errorf("campaign %s is registered, but its token could not be written (%w); "+
			"issue a new one with: bursar campaign rotate %s --token-file %s", name, err, name, service.ShellQuote(path))
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(c.App.Writer, "bursar: registered campaign %s (id %d: %d GPUs guaranteed, R %g, B %g GPU-s, burst ceiling %d); its token is in %s (mode 0600)\n",
		name, id, gpus, rate, bucket, burst, path)
	return nil
}

func campaignRotate(c *cli.Context) error {
	name, err := campaignName(c)
	if err != nil {
		return err
	}
	path, err := issueToken(c, name, func(ctx context.Context, admin *client.Client) (string, error) {
		rot, err := admin.RotateToken(ctx, name)
		if err != nil {
			return "", fmt.Errorf("rotate %s: %w", name, err)
		}
		return rot.Token, nil
	}, func(path string, err error) error {
		return fmt.Errorf("campaign %s has a new token (the old one is dead), but it could not be written (%w); "+
			"rotate again with: bursar campaign rotate %s --token-file %s --force", name, err, name, service.ShellQuote(path))
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(c.App.Writer, "bursar: campaign %s has a new token in %s (mode 0600); the old one no longer works\n", name, path)
	return nil
}

// issueToken asks the service, as the administrator, for a token for
// campaign name (issue) and writes it to the campaign's token file (mode
// 0600), returning the file's path; a token that could not be written is
// reported by unwritten, which says how to get another.
func issueToken(c *cli.Context, name string, issue func(context.Context, *client.Client) (string, error), unwritten func(path string, err error) error) (string, error) {
	path, err := tokenPath(c, name)
	if err != nil {
		return "", err
	}
	admin, ctx, cancel, err := adminCall(c)
	if err != nil {
		return "", err
	}
	defer cancel()
	token, err := issue(ctx, admin)
	if err != nil {
		return "", err
	}
	if err := writeTokenFile(path, token, c.Bool("force")); err != nil {
		return "", unwritten(path, err)
	}
	return path, nil
}

func campaignRevoke(c *cli.Context) error {
	name, err := campaignName(c)
	if err != nil {
		return err
	}
	admin, ctx, cancel, err := adminCall(c)
	if err != nil {
		return err
	}
	defer cancel()
	if _, err := admin.RevokeToken(ctx, name); err != nil {
		return fmt.Errorf("revoke %s: %w", name, err)
	}
	fmt.Fprintf(c.App.Writer, "bursar: campaign %s's token is revoked; 'bursar campaign rotate %s' issues a new one\n", name, name)
	return nil
}

func campaignList(c *cli.Context) error {
	if c.NArg() > 0 {
		return fmt.Errorf("campaign list takes no arguments, got %q", c.Args().Slice())
	}
	admin, ctx, cancel, err := adminCall(c)
	if err != nil {
		return err
	}
	defer cancel()
	list, err := admin.Campaigns(ctx)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(c.App.Writer, 2, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "ID\tNAME\tGUARANTEED\tR\tB\tCEILING\tCLASS\tHELD\tPENDING\tCREDITS\n")
	for _, k := range list.Campaigns {
		e := k.Envelope
		fmt.Fprintf(tw, "%d\t%s\t%d\t%g\t%g\t%d\t%s\t%d\t%d\t%.4g\n", k.ID, k.Name, e.Guaranteed, e.Sustained, e.Bucket,
			e.BurstCeiling, e.Class, k.Held, k.PendingRequests, k.Credits)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(c.App.Writer, "pool %d, free %d, broker time %d\n", list.Pool, list.Free, list.T)
	return nil
}

var namePattern = regexp.MustCompile(client.NamePattern)

// nameFirst lets `bursar campaign create NAME --gpus 8` be written with
// the name first, as people write it: the command-line parser stops at the
// first argument that is not a flag, so the name is moved behind the
// flags.
func nameFirst(args []string) []string {
	if len(args) < 5 || args[1] != "campaign" || strings.HasPrefix(args[3], "-") {
		return args
	}
	switch args[2] {
	case "create", "rotate", "revoke":
	default:
		return args
	}
	out := append(append([]string{}, args[:3]...), args[4:]...)
	return append(out, args[3])
}

// adminCall is the administrator's client and the context of one call to
// the service: at most 30 s, and Ctrl-C ends it.
func adminCall(c *cli.Context) (*client.Client, context.Context, context.CancelFunc, error) {
	admin, err := adminClient(c)
	if err != nil {
		return nil, nil, nil, err
	}
	ctx, cancel := context.WithTimeout(c.Context, 30*time.Second)
	return admin, ctx, cancel, nil
}
