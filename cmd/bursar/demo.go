package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/bursar-hpc/bursar/client"
	"github.com/bursar-hpc/bursar/demo"
	"github.com/bursar-hpc/bursar/internal/interrupt"
	"github.com/bursar-hpc/bursar/service"
)

func demoCommand() *cli.Command {
	return &cli.Command{
		Name:  "demo",
		Usage: "an agent that negotiates the full loop with a Bursar server",
		Description: "Plays one agent campaign against a running 'bursar serve', narrating each step:\n\n" +
			"  1. registers a campaign through the administrator and keeps the token it gets once\n" +
			"  2. reads its supply (free GPUs, congestion price, its tokens and credits)\n" +
			"  3. requests 16 GPUs and polls until they are granted\n" +
			"  4. meters io and inference within its envelope, then beyond it, and is throttled\n" +
			"  5. asks for a lease its token bucket cannot pay for and watches admission hold it\n" +
			"  6. releases one lease, then everything, and reads its grants and journal\n\n" +
			"Any deviation from what the broker's rules promise ends it with a non-zero exit.\n" +
			"It needs the administrator token (--admin-token-file or $" + adminTokenEnv + ").\n\n" +
			"--selftest needs nothing: it starts a private server on a free loopback port (with a\n" +
			"throwaway journal file and a fast clock), plays the loop, also checks that another\n" +
			"campaign's data is out of reach, restarts the server from its journal file and checks\n" +
			"that the campaign came back as it was.\n\n" +
			"Examples:\n" +
			"   bursar demo --admin-token-file admin.token\n" +
			"   bursar demo --server http://127.0.0.1:9000 --name my-agent\n" +
			"   bursar demo --selftest",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "server", Value: "http://" + service.DefaultListen, EnvVars: []string{"BURSAR_SERVER"}, Usage: "the server's base URL"},
			adminTokenFlag(),
			&cli.StringFlag{Name: "name", Usage: "campaign name to register (default: demo-<random>)"},
			&cli.BoolFlag{Name: "selftest", Usage: "run against a private in-process server and check everything"},
			&cli.Float64Flag{Name: "speed", Value: 20, Usage: "--selftest only: the private server's broker seconds per wall-clock second"},
			&cli.DurationFlag{Name: "timeout", Value: 3 * time.Minute, Usage: "give up after this long"},
		},
		Action: runDemo,
	}
}

func runDemo(c *cli.Context) error {
	if c.NArg() > 0 {
		return fmt.Errorf("demo takes no arguments, got %q", c.Args().Slice())
	}
	ctx, stop := interrupt.Context(c.Context)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, c.Duration("timeout"))
	defer cancel()
	out := c.App.Writer
	name := c.String("name")
	if name == "" {
		name = "demo-" + randomHex(4)
	}
	if c.Bool("selftest") {
		n, err := demo.Selftest(ctx, out, name, c.Float64("speed"))
		if err != nil {
			return cli.Exit("selftest FAILED: "+err.Error(), 1)
		}
		fmt.Fprintf(out, "selftest passed: %d checks\n", n)
		return nil
	}
	tok, ok, err := adminToken(c, nil)
	if err != nil {
		return err
	}
	if !ok {
		return errors.New("the demo registers its campaign through the administrator: give --admin-token-file or $" + adminTokenEnv)
	}
	admin, err := client.New(c.String("server"), tok)
	if err != nil {
		return err
	}
	n, err := demo.Run(ctx, out, admin, name)
	if err != nil {
		return cli.Exit("demo FAILED: "+err.Error(), 1)
	}
	fmt.Fprintf(out, "demo done: %d checks passed\n", n)
	return nil
}
