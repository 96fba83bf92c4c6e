package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/bursar-hpc/bursar/client"
	"github.com/bursar-hpc/bursar/internal/interrupt"
	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/service"
	"github.com/bursar-hpc/bursar/slurmgate"
)

// adminTokenEnv names the environment variable that may carry the
// administrator token. There is deliberately no flag for the token itself:
// a command line is visible to every user of the machine through ps.
const adminTokenEnv = "BURSAR_ADMIN_TOKEN"

func adminTokenFlag() cli.Flag {
	return &cli.PathFlag{Name: "admin-token-file", EnvVars: []string{"BURSAR_ADMIN_TOKEN_FILE"},
		Usage: "read the administrator token from this file (surrounding whitespace is ignored; at least " +
			fmt.Sprint(service.MinAdminTokenBytes) + " bytes). Without it the token is read from $" + adminTokenEnv}
}

// adminToken reads the administrator token from --admin-token-file or the
// environment; ok is false when neither gives one.
func adminToken(c *cli.Context, log *slog.Logger) (tok string, ok bool, err error) {
	path := c.Path("admin-token-file")
	env, envSet := os.LookupEnv(adminTokenEnv)
	switch {
	case path != "" && envSet:
		return "", false, fmt.Errorf("the administrator token is given twice (--admin-token-file and $%s): give it one way", adminTokenEnv)
	case path != "":
		st, err := os.Stat(path)
		if err != nil {
			return "", false, fmt.Errorf("--admin-token-file: %w", err)
		}
		if st.Mode().Perm()&0o077 != 0 && log != nil {
			log.Warn("the administrator token file can be read by other users; chmod 600 it", "file", path)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return "", false, fmt.Errorf("--admin-token-file: %w", err)
		}
		tok = strings.TrimSpace(string(b))
	case envSet:
		tok = strings.TrimSpace(env)
	default:
		return "", false, nil
	}
	if len(tok) < service.MinAdminTokenBytes {
		return "", false, fmt.Errorf("the administrator token must be at least %d bytes long (try: head -c 24 /dev/urandom | base64)", service.MinAdminTokenBytes)
	}
	return tok, true, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return hex.EncodeToString(b)
}

func newLogger(level string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: l})), nil
}

// boundToLoopback reports whether a bound address accepts loopback
// connections only.
func boundToLoopback(a net.Addr) bool {
	ta, ok := a.(*net.TCPAddr)
	return ok && ta.IP.IsLoopback()
}

func brokerFlags() []cli.Flag {
	return []cli.Flag{
		&cli.IntFlag{Name: "pool", Value: 512, Category: "broker", Usage: "GPUs in the pool"},
		&cli.IntFlag{Name: "grace", Value: policy.DefaultGrace, Category: "broker", Usage: "preemption notice, in broker seconds, an opportunistic lease gets before it is reclaimed"},
		&cli.Float64Flag{Name: "io-capacity", Value: 28, Category: "broker", Usage: "facility filesystem bandwidth, GB per broker second (1e12: unmetered)"},
		&cli.Float64Flag{Name: "inference-capacity", Value: 5000, Category: "broker", Usage: "facility inference capacity, tokens per broker second (1e12: unmetered)"},
		&cli.BoolFlag{Name: "grant-time-only", Category: "broker", Usage: "use the leaky enforcement that checks tokens at grant time only, instead of prepaid leases"},
	}
}

func brokerConfig(c *cli.Context) policy.Config {
	return policy.Config{Pool: c.Int("pool"), Grace: c.Int("grace"), GrantTimeOnly: c.Bool("grant-time-only"),
		IOCapacity: c.Float64("io-capacity"), InferenceCapacity: c.Float64("inference-capacity")}
}

func serveCommand() *cli.Command {
	return &cli.Command{
		Name:  "serve",
		Usage: "serve the broker over HTTP in real time",
		Description: "Runs the broker as a service. A ticker advances it one broker second every 1/--speed\n" +
			"wall-clock seconds; agents talk to it through the REST API described at /openapi.json\n" +
			"(see docs/service.md). It stops gracefully on SIGINT or SIGTERM.\n\n" +
			"Security: every operation but /healthz and /openapi.json needs a bearer token. The\n" +
			"administrator token comes from --admin-token-file or $" + adminTokenEnv + "; without one the\n" +
			"service refuses to start, unless --insecure-dev is given, which makes up a token and\n" +
			"prints it (loopback only, for trying things out). Registering a campaign returns the\n" +
			"campaign's own token, once; a campaign token reaches that campaign only.\n\n" +
			"Durability: with --data-dir every state change is appended to <dir>/bursar.wal and\n" +
			"fsynced before it is answered, and a restart loads <dir>/bursar.snap and replays the\n" +
			"journal after it: campaigns, tokens, credits, buckets and leases come back as they\n" +
			"were, even after kill -9. A damaged complete record at the journal's tail stops the\n" +
			"start with the 'bursar journal repair' command that cuts it (or --recover-tail). Without\n" +
			"--data-dir everything lives in memory and dies with the process. The broker flags must\n" +
			"stay the same across restarts of one data directory.\n\n" +
			"Examples:\n" +
			"   bursar serve --admin-token-file admin.token --data-dir ./bursar-data\n" +
			"   bursar serve --insecure-dev --speed 10          # fast clock, throwaway state\n" +
			"   BURSAR_ADMIN_TOKEN=$(cat admin.token) bursar serve --listen 127.0.0.1:9000",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "listen", Value: service.DefaultListen, EnvVars: []string{"BURSAR_LISTEN"},
				Usage: "address to serve on: host:port (port 0: any free port; the address is printed), or unix:PATH for a Unix socket whose file mode decides who may connect"},
			&cli.StringFlag{Name: "socket-mode", Value: "0600", Usage: "file mode of a unix: socket (0600: this user only; 0660: also the socket's group)"},
			&cli.Float64Flag{Name: "speed", Value: 1, Usage: fmt.Sprintf("broker seconds per wall-clock second, from %g to %d; when ticks take longer than their period the clock falls behind, which is logged and counted in /metrics", service.MinSpeed, service.MaxSpeed)},
			&cli.IntFlag{Name: "max-conns", Value: service.DefaultMaxConns, Category: "connections",
				Usage: "most open client connections; lowered to fit ulimit -n. At the cap the connection idle longest is closed to make room"},
			&cli.DurationFlag{Name: "idle-timeout", Value: service.DefaultIdleTimeout, Category: "connections", Usage: "close a kept-alive connection idle this long"},
			&cli.StringFlag{Name: "admin-listen", Category: "connections",
				Usage: "also serve the whole API and /metrics on unix:PATH (mode 0600), for the administrator token only and with its own connection cap: the operator's way in however busy --listen is"},
			&cli.IntFlag{Name: "max-waits-per-campaign", Value: service.DefaultMaxWaitsPerCampaign, Category: "tenants",
				Usage: "most long polls one campaign holds open (also at most its pending requests); beyond that its oldest is answered still pending"},
			&cli.PathFlag{Name: "data-dir", EnvVars: []string{"BURSAR_DATA_DIR"},
				Usage: "keep the journal file here and replay it on start (default: memory only)"},
			&cli.IntFlag{Name: "snapshot-every", Value: service.DefaultSnapshotEvery, Category: "journal",
				Usage: "journal records between snapshots (a snapshot folds the history so far, and the journal is truncated behind it); -1: never"},
			&cli.Int64Flag{Name: "snapshot-bytes", Value: service.DefaultSnapshotBytes, Category: "journal",
				Usage: "also snapshot when the live journal has grown this many bytes, however few records that is"},
			&cli.BoolFlag{Name: "recover-tail", Category: "journal",
				Usage: "cut a damaged complete record at the journal's tail instead of refusing to start (the operation it held is lost; see 'bursar journal repair')"},
			adminTokenFlag(),
			&cli.BoolFlag{Name: "insecure-dev", Usage: "allow starting without an administrator token: a random one is made up and printed (loopback addresses only)"},
			&cli.IntFlag{Name: "journal-keep", Value: service.DefaultJournalKeep, Category: "retention", Usage: "journal records (all campaigns) the API can page through"},
			&cli.IntFlag{Name: "campaign-journal-keep", Value: service.DefaultCampaignJournalKeep, Category: "retention", Usage: "journal records per campaign the API can page through"},
			&cli.IntFlag{Name: "grant-keep", Value: service.DefaultGrantKeep, Category: "retention", Usage: "grants per campaign the API can page through"},
			&cli.IntFlag{Name: "max-pending", Value: service.DefaultMaxPending, Usage: "pending requests one campaign may have; more are refused with 429"},
			&cli.IntFlag{Name: "max-leases", Value: service.DefaultMaxLeases, Usage: "leases plus pending requests one campaign may have; more requests are refused with 429 (a term of the data directory's bound, docs/service.md)"},
			&cli.BoolFlag{Name: "admit-on-request", Category: "broker",
				Usage: "run an admission pass right after every request and release, not only at the ticks: a request the pool can take is granted before it is answered (a gate in front of Slurm wants this; docs/service.md)"},
			&cli.Float64Flag{Name: "write-rate", Value: service.DefaultWriteRate, Category: "tenants",
				Usage: "writes (request, release, consume) per wall-clock second one campaign token may make; more are refused with 429 (-1: unlimited)"},
			&cli.IntFlag{Name: "write-burst", Category: "tenants", Usage: "writes one campaign token may make at once (default: twice --write-rate)"},
			&cli.IntFlag{Name: "max-consume-per-tick", Value: service.DefaultMaxConsumePerTick, Category: "tenants",
				Usage: "consume calls taken from one campaign per broker second; more are refused with 429, so that metering spam cannot grow the journal"},
			&cli.PathFlag{Name: "slurm-key-file", EnvVars: []string{"BURSAR_SLURM_KEY_FILE"}, Category: "slurm",
				Usage: "sign Slurm lease tokens with the key in this file (at least 32 bytes; the job_submit plugin checks them with the same file, docs/slurm.md)"},
			&cli.StringFlag{Name: "pool-from-slurm", Category: "slurm",
				Usage: "set the pool from this Slurm partition (sinfo): its nodes' GPUs (GRES gpu), or their CPUs when it has no GPU; instead of --pool"},
			&cli.BoolFlag{Name: "slurm-enforce", Category: "slurm",
				Usage: "watch Slurm's queue: cancel every job on a lease token past its expiry, SIGTERM through Slurm then cancel --slurm-grace later a job whose lease is gone or under notice"},
			&cli.DurationFlag{Name: "slurm-grace", Value: 10 * time.Second, Category: "slurm", Usage: "with --slurm-enforce: time between the SIGTERM and the cancellation"},
			&cli.PathFlag{Name: "slurm-once-dir", Category: "slurm",
				Usage: "the gate plugin's ONCE_DIR (on this host or shared with it): a released lease's tokens are recorded there as spent, so the gate admits no job on them (docs/slurm.md)"},
			&cli.StringFlag{Name: "slurm-unit", Category: "slurm",
				Usage: "with --slurm-enforce: what a lease's size counts, as the gate plugin's UNIT: cpu (CPUs stand in for GPUs) or gpu; a running job on more than its lease is killed (default: what --pool-from-slurm counted, else cpu)"},
			&cli.PathFlag{Name: "slurm-ledger", Category: "slurm", Usage: "with --slurm-enforce: append each job seen on a lease token to this file (JSON lines: job, lease, campaign, gpus, expires_unix)"},
			&cli.StringFlag{Name: "slurm-unleased", Value: "ignore", Category: "slurm",
				Usage: "with --slurm-enforce: what to do with a job in a gated partition without a lease (queued before the gate): ignore (logged; bursar slurm audit lists it), hold (a pending one gets an administrator's hold; a running one runs to its end) or cancel (a pending one at once, a running one SIGTERM then the kill --slurm-grace later); docs/slurm.md"},
			&cli.StringSliceFlag{Name: "slurm-ungated", Category: "slurm", Usage: "with --slurm-enforce: partitions the gate plugin lets through (its UNGATED): their jobs need no lease"},
			&cli.StringFlag{Name: "log-level", Value: "info", Usage: "debug (one line per request), info, warn or error"},
		}, brokerFlags()...),
		Action: runServe,
	}
}

func runServe(c *cli.Context) error {
	if c.NArg() > 0 {
		return fmt.Errorf("serve takes no arguments, got %q", c.Args().Slice())
	}
	log, err := newLogger(c.String("log-level"))
	if err != nil {
		return err
	}
	listenAddr := c.String("listen")
	if err := service.ValidSpeed(c.Float64("speed")); err != nil {
		return fmt.Errorf("--speed: %w", err)
	}
	if c.Int("max-conns") < 1 {
		return fmt.Errorf("--max-conns must be at least 1, got %d", c.Int("max-conns"))
	}
	if c.Int("max-waits-per-campaign") < 1 {
		return fmt.Errorf("--max-waits-per-campaign must be at least 1, got %d", c.Int("max-waits-per-campaign"))
	}
	if a := c.String("admin-listen"); a != "" && !strings.HasPrefix(a, client.UnixPrefix) {
		return fmt.Errorf("--admin-listen %s: want unix:PATH (a socket only the service's user can reach)", a)
	}
	if n := c.Int64("snapshot-bytes"); n < 1 {
		return fmt.Errorf("--snapshot-bytes must be a positive number of bytes, got %d", n)
	}
	if n := c.Int("snapshot-every"); n == 0 || n < -1 {
		return fmt.Errorf("--snapshot-every must be a positive number of records or -1 (never), got %d", n)
	}
	if r := c.Float64("write-rate"); !(r > 0 || r == -1) || math.IsInf(r, 0) {
		return fmt.Errorf("--write-rate must be a positive number of writes per second or -1 (unlimited), got %v", r)
	}
	if c.Int("write-burst") < 0 {
		return fmt.Errorf("--write-burst must not be negative, got %d", c.Int("write-burst"))
	}
	if c.Int("max-consume-per-tick") < 1 {
		return fmt.Errorf("--max-consume-per-tick must be at least 1, got %d", c.Int("max-consume-per-tick"))
	}
	if c.Duration("idle-timeout") <= 0 {
		return fmt.Errorf("--idle-timeout must be positive, got %v", c.Duration("idle-timeout"))
	}
	if u := c.String("slurm-unit"); u != "" && u != "cpu" && u != "gpu" {
		return fmt.Errorf("--slurm-unit is cpu or gpu, not %q", u)
	}
	if part := c.String("pool-from-slurm"); part != "" {
		if c.IsSet("pool") {
			return fmt.Errorf("give --pool or --pool-from-slurm, not both")
		}
		n, unit, err := slurmgate.Pool(part)
		if err != nil {
			return fmt.Errorf("--pool-from-slurm %s: %w", part, err)
		}
		if err := c.Set("pool", strconv.Itoa(n)); err != nil {
			return err
		}
		log.Info("pool read from Slurm", "partition", part, "pool", n, "unit", unit)
		if !c.IsSet("slurm-unit") && unit == "GPUs" {
			if err := c.Set("slurm-unit", "gpu"); err != nil {
				return err
			}
		}
	}
	// Everything that can be refused is checked before a made-up token
	// is printed (a refused start must not have shown a secret).
	if err := brokerConfig(c).Validate(); err != nil {
		return fmt.Errorf("broker flags: %w", err)
	}
	tok, ok, err := adminToken(c, log)
	if err != nil {
		return err
	}
	if !ok && !c.Bool("insecure-dev") {
		return errors.New("no administrator token: give --admin-token-file or $" + adminTokenEnv +
			" (or --insecure-dev to try things out on loopback)")
	}
	mode, err := service.ParseSocketMode(c.String("socket-mode"))
	if err != nil {
		return err
	}
	ln, err := service.Listen(listenAddr, mode)
	if errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("--listen %s: the address is in use (another program, or another bursar serve, listens there): "+
			"give another --listen, and the same address to the clients as --server or $BURSAR_SERVER", listenAddr)
	}
	if err != nil {
		return err
	}
	if !ok {
		// The address actually bound decides, not the string: "localhost"
		// can resolve to anything /etc/hosts says.
		if !boundToLoopback(ln.Addr()) && !service.IsUnixSocket(ln.Addr()) {
			ln.Close()
			return fmt.Errorf("--insecure-dev serves loopback addresses only (or a unix: socket); %s bound %s", listenAddr, ln.Addr())
		}
		tok = randomHex(16)
	}
	var adminLn net.Listener
	if a := c.String("admin-listen"); a != "" {
		if adminLn, err = service.Listen(a, 0o600); err != nil {
			ln.Close()
			return fmt.Errorf("--admin-listen: %w", err)
		}
	}
	closeListeners := func() {
		ln.Close()
		if adminLn != nil {
			adminLn.Close()
		}
	}
	slurmKey, err := readSlurmKey(c.Path("slurm-key-file"))
	if err != nil {
		closeListeners()
		return err
	}
	svc, err := service.New(service.Options{
		SlurmKey: slurmKey, SlurmOnceDir: c.Path("slurm-once-dir"), AdmitOnRequest: c.Bool("admit-on-request"),
		Broker: brokerConfig(c), Speed: c.Float64("speed"), DataDir: c.Path("data-dir"), AdminToken: tok,
		JournalKeep: c.Int("journal-keep"), CampaignJournalKeep: c.Int("campaign-journal-keep"), GrantKeep: c.Int("grant-keep"),
		MaxPending: c.Int("max-pending"), MaxLeases: c.Int("max-leases"), MaxConns: c.Int("max-conns"), IdleTimeout: c.Duration("idle-timeout"), Logger: log,
		SnapshotEvery: c.Int("snapshot-every"), SnapshotBytes: c.Int64("snapshot-bytes"), RecoverTail: c.Bool("recover-tail"),
		WriteRate: c.Float64("write-rate"), WriteBurst: c.Int("write-burst"), MaxConsumePerTick: c.Int("max-consume-per-tick"),
		MaxWaitsPerCampaign: c.Int("max-waits-per-campaign"), AdminListener: adminLn,
	})
	if err != nil {
		closeListeners()
		return err
	}
	if !ok {
		// Printed only now that nothing can refuse the start any more.
		fmt.Fprintf(os.Stderr, "bursar: --insecure-dev: no administrator token was given, so this process made one up.\n"+
			"bursar: it is printed here (which is what makes this mode insecure) and dies with the process:\n"+
			"bursar:   export %s=%s\n", adminTokenEnv, tok)
	}
	ctx, stop := interrupt.Context(c.Context)
	defer stop()
	// One line on stdout, for people and for scripts that started the
	// service on port 0.
	where := "http://" + ln.Addr().String()
	if service.IsUnixSocket(ln.Addr()) {
		where = client.UnixPrefix + ln.Addr().String()
	}
	if err := startSlurmEnforcer(ctx, slurmEnforceFlags{enforce: c.Bool("slurm-enforce"), grace: c.Duration("slurm-grace"), ledger: c.Path("slurm-ledger"),
		unit: c.String("slurm-unit"), unleased: c.String("slurm-unleased"), ungated: c.StringSlice("slurm-ungated")},
		svc, slurmKey, log); err != nil {
		svc.Close()
		closeListeners()
		return err
	}
	fmt.Fprintf(c.App.Writer, "bursar: serving on %s (speed %g, %s)\n", where, c.Float64("speed"), durability(c.Path("data-dir")))
	return svc.Serve(ctx, ln)
}

func durability(dir string) string {
	if dir == "" {
		return "memory only"
	}
	return "journal in " + dir
}
