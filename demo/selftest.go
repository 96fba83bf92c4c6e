package demo

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"time"

	"github.com/bursar-hpc/bursar/client"
	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/service"
)

// server is an in-process service on a free loopback port.
type server struct {
	svc  *service.Service
	url  string
	stop context.CancelFunc
	done chan error
}

func startServer(opts service.Options) (*server, error) {
	svc, err := service.New(opts)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		svc.Close()
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &server{svc: svc, url: "http://" + ln.Addr().String(), stop: cancel, done: make(chan error, 1)}
	go func() { s.done <- svc.Serve(ctx, ln) }()
	return s, nil
}

// shutdown stops the server gracefully and returns Serve's error.
func (s *server) shutdown() error {
	s.stop()
	return <-s.done
}

// Selftest plays the demo against a private server (on a free loopback
// port, with a throwaway data directory, at speed) and checks, beyond the
// loop itself, that a campaign token reaches its own campaign only and
// that a restart from the journal file brings the campaign back as it
// was. It returns how many checks passed and the first failure.
func Selftest(ctx context.Context, out io.Writer, name string, speed float64) (checks int, err error) {
	dir, err := os.MkdirTemp("", "bursar-selftest-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	adminTok := rand.Text()
	opts := service.Options{
		Broker: policy.Config{Pool: 512, Grace: policy.DefaultGrace, IOCapacity: 28, InferenceCapacity: 5000},
		Speed:  speed, DataDir: dir, AdminToken: adminTok,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
	srv, err := startServer(opts)
	if err != nil {
		return 0, err
	}
	defer func() {
		if srv != nil {
			if serr := srv.shutdown(); err == nil && serr != nil {
				err = serr
			}
		}
	}()
	fmt.Fprintf(out, "selftest: private server on %s (speed %g, journal file in %s)\n", srv.url, speed, dir)
	admin, err := client.New(srv.url, adminTok)
	if err != nil {
		return 0, err
	}
	ag := &agent{out: out, admin: admin, name: name, poll: 20 * time.Millisecond}
	defer func() { checks = ag.checks }()
	if err := ag.negotiate(ctx); err != nil {
		return ag.checks, err
	}

	ag.title("check that tokens reach their own campaign only")
	if _, err := admin.Register(ctx, client.CampaignSpec{Name: "other", Budget: 1, Sustained: 1, BurstCeiling: 1, Bucket: 1, Class: client.ClassOpportunistic}); err != nil {
		return ag.checks, err
	}
	probes := []struct {
		what string
		c    *client.Client
		camp string
		want error
	}{
		{"own token on another campaign", ag.camp, "other", client.ErrForbidden},
		{"no token", admin.WithToken(""), ag.name, client.ErrUnauthorized},
		{"a made-up token", admin.WithToken("bursar_c0_00000000000000000000000000000000"), ag.name, client.ErrUnauthorized},
	}
	for _, p := range probes {
		_, err := p.c.Supply(ctx, p.camp)
		ag.say("%s: %v", p.what, err)
		if err := ag.expect(errors.Is(err, p.want), "%s: want %v, got %v", p.what, p.want, err); err != nil {
			return ag.checks, err
		}
	}
	if _, err := ag.camp.Campaigns(ctx); !errors.Is(err, client.ErrForbidden) {
		return ag.checks, ag.expect(false, "a campaign token listed the campaigns: %v", err)
	}

	ag.title("restart the server from its journal file")
	before, err := snapshot(ctx, ag.camp, ag.name)
	if err != nil {
		return ag.checks, err
	}
	if err := srv.shutdown(); err != nil {
		return ag.checks, fmt.Errorf("shutdown: %w", err)
	}
	srv = nil
	// The restarted server does not tick, so what it shows is exactly what
	// the journal file rebuilt.
	opts.Speed = 0
	srv, err = startServer(opts)
	if err != nil {
		return ag.checks, fmt.Errorf("restart: %w", err)
	}
	rep := srv.svc.Report()
	ag.say("replayed %v at %s, broker time %d", rep.Records, srv.url, rep.Time)
	c2, err := client.New(srv.url, ag.token)
	if err != nil {
		return ag.checks, err
	}
	after, err := snapshot(ctx, c2, ag.name)
	if err != nil {
		return ag.checks, fmt.Errorf("after restart, the campaign's token: %w", err)
	}
	if err := ag.expect(after.keeps(before), "the restart lost state:\nbefore %s\nafter  %s", before, after); err != nil {
		return ag.checks, err
	}
	ag.say("campaign %s, its token, envelope, grants (%d) and its %d journal records came back; credits %.6g, clock at t=%d",
		ag.name, after.campaign.Campaign.Grants, len(before.journal.Records), after.campaign.Campaign.Credits, after.supply.T)
	return ag.checks, nil
}

// view is what a campaign can read of itself.
type view struct {
	campaign *client.CampaignOut
	supply   *client.Supply
	grants   *client.Grants
	journal  *client.Journal
}

func snapshot(ctx context.Context, c *client.Client, name string) (v view, err error) {
	if v.campaign, err = c.Campaign(ctx, name); err != nil {
		return v, err
	}
	if v.supply, err = c.Supply(ctx, name); err != nil {
		return v, err
	}
	if v.grants, err = c.Grants(ctx, name, client.Page{After: 0, Limit: 1000}); err != nil {
		return v, err
	}
	v.journal, err = c.Journal(ctx, "", client.Page{After: 0, Limit: 1000})
	return v, err
}

// keeps reports whether v, read after a restart, still has everything
// that before (read while the first server ran) showed. The first server
// went on ticking after before was read, so the clock may have moved on
// and the credits gone down, but nothing read may be missing or changed.
func (v view) keeps(before view) bool {
	a, b := v.campaign.Campaign, before.campaign.Campaign
	if !sameSpec(a.Envelope, b.Envelope) || a.ID != b.ID || a.Name != b.Name || a.Grants != b.Grants || a.GrantedGPUs != b.GrantedGPUs {
		return false
	}
	if a.Credits > b.Credits || v.supply.T < before.supply.T || len(v.grants.Grants) != len(before.grants.Grants) ||
		len(v.journal.Records) < len(before.journal.Records) {
		return false
	}
	for i := range before.grants.Grants {
		if v.grants.Grants[i] != before.grants.Grants[i] {
			return false
		}
	}
	for i, r := range before.journal.Records {
		if v.journal.Records[i].Seq != r.Seq || !bytes.Equal(v.journal.Records[i].Record, r.Record) {
			return false
		}
	}
	return true
}

func (v view) String() string {
	return fmt.Sprintf("{t=%d campaign=%+v grants=%d journal=%d}", v.supply.T, v.campaign.Campaign, len(v.grants.Grants), len(v.journal.Records))
}
