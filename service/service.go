package service

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"math"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/bursar-hpc/bursar/policy"
)

// Defaults of Options.
const (
	DefaultListen              = "127.0.0.1:8642"
	DefaultJournalKeep         = 10000
	DefaultCampaignJournalKeep = 1000
	DefaultGrantKeep           = 1000
	DefaultMaxPending          = 1024
	// DefaultMaxLeases caps one campaign's leases plus pending requests
	// (issue 34 §6: a term of the disk bound).
	DefaultMaxLeases   = 1024
	DefaultDurableWait = 10 * time.Second
	DefaultIdleTimeout = 15 * time.Second
	// DefaultSnapshotEvery is about a day of an idle service at speed 1.
	DefaultSnapshotEvery = 100000
	// DefaultSnapshotBytes bounds the live journal's growth between
	// snapshots (issue 34 §6): 64 MiB, about 600,000 tick records.
	DefaultSnapshotBytes = 64 << 20
	// MaxSpeed bounds --speed: beyond it a tick period is shorter than the
	// time a tick takes under load, and the clock would only fall behind.
	// With a data directory each tick waits for its fsync, so the clock
	// falls behind far sooner (a few thousand ticks per second on an SSD);
	// the service then warns and counts it (see clockWatch).
	MaxSpeed = 100000
	// MinSpeed bounds --speed from below: one broker second per 1000
	// wall-clock seconds. Slower clocks are not useful, and a period of
	// 1/speed seconds overflows time.Duration below about 1.1e-10.
	MinSpeed = 0.001
)

// Options configure a Service.
type Options struct {
	// Broker is the broker's parameters. With a data directory they must
	// equal the ones its journal file was written with.
	Broker policy.Config
	// Speed is broker ticks per wall-clock second. 0 starts no ticker: the
	// embedding program (or a test) calls Tick.
	Speed float64
	// DataDir holds the journal file; "" keeps everything in memory only.
	DataDir string
	// AdminToken is the administrator's bearer token (at least
	// MinAdminTokenBytes). Only its hash is kept.
	AdminToken string
	// JournalKeep, CampaignJournalKeep and GrantKeep are how many journal
	// records (all campaigns; per campaign) and grants per campaign the API
	// can page through. 0 means the default.
	JournalKeep, CampaignJournalKeep, GrantKeep int
	// MaxPending caps one campaign's pending requests (0: the default), so
	// that one agent cannot make every admission pass slow for all.
	MaxPending int
	// MaxLeases caps one campaign's leases together with its pending
	// requests, each of which may become a lease (0: DefaultMaxLeases): a
	// request beyond it is 429. With MaxPending, the retention limits and
	// the write rate it bounds the data directory (docs/service.md).
	MaxLeases int
	// DurableWait bounds how long an answer waits for its fsync (0: the
	// default).
	DurableWait time.Duration
	// RecoverTail cuts a damaged complete record at the journal's tail
	// instead of refusing to start (the operation it held is lost).
	RecoverTail bool
	// SnapshotEvery is how many journal records are appended between
	// snapshots (0: DefaultSnapshotEvery; negative: never, whatever
	// SnapshotBytes says).
	SnapshotEvery int
	// SnapshotBytes starts a snapshot when the live journal has grown
	// this many bytes, however few records that is (0:
	// DefaultSnapshotBytes), so that the live journal stays within about
	// this size plus one record.
	SnapshotBytes int64
	// MaxConns caps open connections (0: DefaultMaxConns); Serve lowers
	// it to fit the process's descriptor limit. At the cap the connection
	// idle longest is closed to make room.
	MaxConns int
	// IdleTimeout closes a kept-alive connection idle this long (0:
	// DefaultIdleTimeout).
	IdleTimeout time.Duration
	// WriteRate is how many writes (request, release, consume) per
	// wall-clock second one campaign token may make, WriteBurst how many
	// at once (0: DefaultWriteRate and twice the rate; a negative rate:
	// unlimited). See tenant.go.
	WriteRate  float64
	WriteBurst int
	// MaxWaitsPerCampaign is the most long polls one campaign holds open
	// (0: DefaultMaxWaitsPerCampaign; see waiters.go).
	MaxWaitsPerCampaign int
	// AdminListener, when set, is served besides Serve's listener for the
	// administrator only (a campaign token is 403 on it), with its own
	// connection cap: the operator's way in however busy the main
	// listener is (`bursar serve --admin-listen unix:PATH`).
	AdminListener net.Listener
	// MaxConsumePerTick is how many consume calls of one campaign are
	// taken per broker second (0: DefaultMaxConsumePerTick).
	MaxConsumePerTick int
	// AdmitOnRequest runs an admission pass right after every request and
	// release instead of only at the ticks (admit.go), so that a request
	// the pool can take is granted before its answer is sent.
	AdmitOnRequest bool
	// SlurmKey signs Slurm lease tokens (slurm.go); nil: none are issued.
	SlurmKey []byte
	// SlurmOnceDir is the gate plugin's ONCE_DIR (docs/slurm.md): a
	// released lease's tokens are recorded there as spent, so that the
	// gate admits no job on them ("": not recorded).
	SlurmOnceDir string
	// Logger receives the service log (nil: discard).
	Logger *slog.Logger
}

func (o *Options) fill() error {
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	for _, k := range []*int{&o.JournalKeep, &o.CampaignJournalKeep, &o.GrantKeep, &o.MaxPending, &o.MaxLeases} {
		if *k < 0 {
			return fmt.Errorf("service: retention and pending limits must not be negative, got %d", *k)
		}
	}
	if o.JournalKeep == 0 {
		o.JournalKeep = DefaultJournalKeep
	}
	if o.CampaignJournalKeep == 0 {
		o.CampaignJournalKeep = DefaultCampaignJournalKeep
	}
	if o.GrantKeep == 0 {
		o.GrantKeep = DefaultGrantKeep
	}
	if o.MaxPending == 0 {
		o.MaxPending = DefaultMaxPending
	}
	if o.MaxLeases == 0 {
		o.MaxLeases = DefaultMaxLeases
	}
	if math.IsNaN(o.WriteRate) || math.IsInf(o.WriteRate, 0) || o.WriteBurst < 0 || o.MaxConsumePerTick < 0 {
		return fmt.Errorf("service: the write rate must be finite, and the write burst and consume limit not negative")
	}
	if o.WriteRate == 0 {
		o.WriteRate = DefaultWriteRate
	}
	if o.WriteBurst == 0 {
		o.WriteBurst = max(1, int(math.Ceil(2*o.WriteRate)))
	}
	if o.MaxConsumePerTick == 0 {
		o.MaxConsumePerTick = DefaultMaxConsumePerTick
	}
	if o.MaxWaitsPerCampaign < 0 {
		return fmt.Errorf("service: the long polls per campaign must not be negative, got %d", o.MaxWaitsPerCampaign)
	}
	if o.MaxWaitsPerCampaign == 0 {
		o.MaxWaitsPerCampaign = DefaultMaxWaitsPerCampaign
	}
	if o.IdleTimeout < 0 || o.MaxConns < 0 {
		return fmt.Errorf("service: the idle timeout and the connection limit must not be negative")
	}
	if o.SnapshotEvery == 0 {
		o.SnapshotEvery = DefaultSnapshotEvery
	}
	if o.SnapshotBytes < 0 {
		return fmt.Errorf("service: the snapshot size bound must not be negative, got %d", o.SnapshotBytes)
	}
	if o.SnapshotBytes == 0 {
		o.SnapshotBytes = DefaultSnapshotBytes
	}
	if o.IdleTimeout == 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	if o.DurableWait <= 0 {
		o.DurableWait = DefaultDurableWait
	}
	if err := ValidSpeed(o.Speed); o.Speed != 0 && err != nil {
		return fmt.Errorf("service: %w", err)
	}
	if len(o.SlurmKey) > 0 && len(o.SlurmKey) < MinSlurmKeyBytes {
		return fmt.Errorf("service: the Slurm key must be at least %d bytes long, got %d", MinSlurmKeyBytes, len(o.SlurmKey))
	}
	if len(o.AdminToken) < MinAdminTokenBytes {
		return fmt.Errorf("service: the administrator token must be at least %d bytes long", MinAdminTokenBytes)
	}
	return o.Broker.Validate()
}

// ValidSpeed checks a tick rate against [MinSpeed, MaxSpeed].
func ValidSpeed(speed float64) error {
	if math.IsNaN(speed) || speed < MinSpeed || speed > MaxSpeed {
		return fmt.Errorf("speed must be between %g and %d broker seconds per wall-clock second, got %v", MinSpeed, MaxSpeed, speed)
	}
	return nil
}

// Service is the broker served over HTTP in real time. One lock guards the
// broker, whose core stays single-threaded; the ticker advances it every
// 1/Speed seconds.
type Service struct {
	opts      Options
	log       *slog.Logger
	adminHash [32]byte

	mu   sync.Mutex
	core *core
	// tickWall is when the broker reached its current time, wall-clock
	// UTC Unix milliseconds (the last tick, or the start): a lease's
	// broker expiry falls at tickWall + (expiry − now)/speed, whenever in
	// the second it was granted (slurm.go).
	tickWall int64
	// slurmRunning says whether a job of a lease (campaign, the
	// campaign's lease id) runs in Slurm, as the enforcer last read the
	// queue (SetSlurmRunning; nil: no enforcer): a release of such a
	// lease holds it until nothing of it runs (slurmhold.go).
	slurmRunning func(campaign string, lease int) bool

	// slurmIssued are the expiries of the Slurm tokens issued for each
	// lease (by campaign and the campaign's lease id), for the
	// records of its release in SlurmOnceDir (slurm.go).
	slurmIssued map[slurmLeaseName][]int64
	wal         *wal // nil without a data directory
	failed      error
	closed      bool

	failOnce sync.Once
	failCh   chan struct{}

	// durableT is the latest broker time whose tick is on stable storage:
	// what /healthz shows, so that it never names a time a crash could
	// take back.
	durableT atomic.Int64

	clock    clockStats
	waits    waitBoard // long polls on requests (wait.go, waiters.go)
	inflight inflight  // authenticated requests in flight (waiters.go)
	conns    connStats
	limiter  atomic.Pointer[connLimiter] // set by Serve
	writes   *writeLimits                // nil: unlimited
	tickHook func()                      // tests: runs before each ticker tick
	// compactHook (tests) is called before each step of a compaction;
	// false stops it there, as a crash would (compactSteps).
	compactHook func(step int) bool

	api     huma.API
	handler http.Handler
	spec    []byte
	report  ReplayReport

	snapWG    sync.WaitGroup
	snapshots atomic.Int64

	startOnce sync.Once
	closeOnce sync.Once
	stop      chan struct{}
	wg        sync.WaitGroup
	closeErr  error
}

// New builds a service. With a data directory it replays the journal file
// first, so that campaigns, tokens, credits, buckets and leases are as they
// were when the last record was written.
func New(opts Options) (*Service, error) {
	if err := opts.fill(); err != nil {
		return nil, err
	}
	start := time.Now()
	c, w, rep, err := openState(opts)
	if err != nil {
		return nil, err
	}
	s := &Service{opts: opts, log: opts.Logger, adminHash: hashToken(opts.AdminToken), core: c, wal: w, report: rep,
		failCh: make(chan struct{}), stop: make(chan struct{}), writes: newWriteLimits(opts.WriteRate, opts.WriteBurst)}
	conns := opts.MaxConns
	if conns == 0 {
		conns = DefaultMaxConns
	}
	s.setLimits(conns) // Serve sets them again for the cap it finds
	s.durableT.Store(int64(c.b.Now()))
	s.tickWall = time.Now().UnixMilli()
	if w != nil {
		if rep.CutBytes > 0 {
			s.log.Warn("journal file: damaged tail cut", "file", rep.Path, "reason", rep.CutReason, "bytes", rep.CutBytes)
		}
		total := 0
		for _, n := range rep.Records {
			total += n
		}
		s.log.Info("journal file replayed", "file", rep.Path, "new", rep.Created, "snapshot_operations", rep.Snapshot, "records", total,
			"campaigns", c.b.NumCampaigns(), "leases", len(c.b.Leases()), "pending", len(c.b.Pending()),
			"t", rep.Time, "took", time.Since(start).Round(time.Millisecond))
	}
	if err := s.buildAPI(); err != nil {
		s.Close()
		return nil, err
	}
	if w != nil && w.sealed.Load() {
		// A crash interrupted a snapshot: finish it now, from the state
		// at the end of bursar.wal.old, before any rotation could need
		// its name.
		s.startCompaction(w.sealedState, w.sealedBase)
		w.sealedState = nil
	}
	return s, nil
}

// openState builds the core and, with a data directory, replays the
// journal file into it.
func openState(opts Options) (*core, *wal, ReplayReport, error) {
	c, err := newCore(opts.Broker, opts.JournalKeep, opts.CampaignJournalKeep, opts.GrantKeep)
	if err != nil {
		return nil, nil, ReplayReport{}, err
	}
	c.idKeep = idKeepFor(opts.MaxLeases, opts.CampaignJournalKeep, opts.GrantKeep)
	if opts.DataDir == "" {
		return c, nil, ReplayReport{}, nil
	}
	w, rep, err := openWAL(opts.DataDir, opts.Broker, c.replayOne, opts.RecoverTail, c.dump)
	if err != nil {
		return nil, nil, rep, err
	}
	rep.Time = c.b.Now()
	return c, w, rep, nil
}

// replayOne applies one record of the journal file. Every record was
// written because its operation changed the state, so one that changes
// nothing now means the file and the broker disagree.
func (c *core) replayOne(o *op) error {
	_, changed, err := c.apply(o)
	if err != nil && !errors.Is(err, policy.ErrBudgetExhausted) {
		return err
	}
	if !changed {
		return fmt.Errorf("%w: it changes nothing on replay", errReplay)
	}
	return nil
}

// Report is what replaying the data directory found (zero without one).
func (s *Service) Report() ReplayReport { return s.report }

// Handler is the HTTP API.
func (s *Service) Handler() http.Handler { return s.handler }

// OpenAPI is the API description as served at /openapi.json.
func (s *Service) OpenAPI() []byte { return s.spec }

// Failed reports the error that stopped the service (a journal file write
// or fsync failure), nil while it is healthy.
func (s *Service) Failed() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failed
}

func (s *Service) failLocked(err error) {
	if s.failed != nil {
		return
	}
	s.failed = err
	s.log.Error("service failed; answering 503 from now on", "err", err)
	s.failOnce.Do(func() { close(s.failCh) })
}

func (s *Service) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failLocked(err)
}

func errUnavailable(detail string) error { return huma.Error503ServiceUnavailable(detail) }

// txn is a handler's view of the state while it holds the lock.
type txn struct {
	s   *Service
	c   *core
	pos int64 // journal offset the answer must wait for
}

// apply runs one operation and, when it changed the state, appends it to
// the journal file before the lock is released. Applying first and
// appending second is safe because nothing can observe the state in
// between (the lock is held), and a crash in between loses both the change
// and its answer. Only changes are journaled, so refused operations cost
// nothing on replay.
func (t *txn) apply(o *op) (result, error) {
	o.T = t.c.b.Now()
	if o.Op == opTick {
		o.T++
	}
	o.Wall = time.Now().UnixMilli()
	res, changed, err := t.c.apply(o)
	if o.Op == opTick && err == nil {
		t.s.tickWall = o.Wall
	}
	if changed && t.s.wal != nil {
		pos, werr := t.s.wal.append(o)
		if werr != nil {
			t.s.failLocked(werr)
			return res, errUnavailable("the journal file cannot be written; the service has stopped taking requests")
		}
		t.pos = pos
		t.s.maybeSnapshotLocked()
	}
	return res, err
}

// maybeSnapshotLocked rotates the journal and starts a snapshot when
// enough records or bytes were appended since the last one (s.mu held).
// A snapshot still being written is waited for (it takes no lock), so
// that the live journal never outgrows SnapshotBytes by more than a
// record: the disk bound (docs/service.md) counts on it.
func (s *Service) maybeSnapshotLocked() {
	w := s.wal
	due := w.sinceRotate >= s.opts.SnapshotEvery || w.sinceRotateBytes >= s.opts.SnapshotBytes
	if s.opts.SnapshotEvery < 0 || !due {
		return
	}
	if w.sealed.Load() {
		s.snapWG.Wait()
		if w.sealed.Load() {
			return // it failed (logged); bursar.wal.old must stay
		}
	}
	if err := w.rotate(); err != nil {
		s.failLocked(err)
		return
	}
	s.startCompaction(s.core.dump(), w.ops)
}

// startCompaction writes the snapshot of state, the state after the
// first base operations (where bursar.wal.old ends), in the background;
// w.sealed stays set (no rotation may overwrite the sealed segment)
// until it has succeeded.
func (s *Service) startCompaction(state *coreDump, base int64) {
	w := s.wal
	s.snapWG.Add(1)
	go func() {
		defer s.snapWG.Done()
		start := time.Now()
		if err := compactSteps(w.dd, s.opts.Broker, state, base, s.compactHook); err != nil {
			// bursar.wal.old stays; the next start replays it. No
			// further rotation may overwrite it.
			s.log.Error("snapshot failed; the journal keeps growing until a restart", "err", err)
			return
		}
		w.sealed.Store(false)
		s.snapshots.Add(1)
		s.log.Info("snapshot written; journal truncated behind it", "took", time.Since(start).Round(time.Millisecond))
	}()
}

// withState runs fn under the lock, then waits until everything fn saw or
// changed is on stable storage. That covers reads as well: a read can
// reveal the effect of a tick (a grant), and no answer may reveal state
// that a power failure could take back.
func (s *Service) withState(ctx context.Context, fn func(*txn) error) error {
	s.mu.Lock()
	switch {
	case s.failed != nil:
		s.mu.Unlock()
		return errUnavailable("the service has failed: " + s.failed.Error())
	case s.closed:
		s.mu.Unlock()
		return errUnavailable("the service is shutting down")
	}
	t := txn{s: s, c: s.core}
	if s.wal != nil {
		t.pos = s.wal.position()
	}
	err := fn(&t)
	failed := s.failed
	s.mu.Unlock()
	if failed != nil {
		return errUnavailable("the service has failed: " + failed.Error())
	}
	if s.wal != nil {
		wctx, cancel := context.WithTimeout(ctx, s.opts.DurableWait)
		defer cancel()
		if werr := s.wal.waitDurable(wctx, t.pos); werr != nil {
			if errors.Is(werr, errWALFailed) {
				s.fail(werr)
			}
			return errUnavailable("the answer could not be made durable: " + werr.Error())
		}
	}
	return err
}

// Tick advances the broker one second and returns once the tick is on
// stable storage, so that the ticker never runs more than one tick ahead of
// the disk.
func (s *Service) Tick() error {
	now := 0
	err := s.withState(context.Background(), func(t *txn) error {
		_, err := t.apply(&op{Op: opTick})
		now = t.c.b.Now()
		return err
	})
	for err == nil {
		old := s.durableT.Load()
		if int64(now) <= old || s.durableT.CompareAndSwap(old, int64(now)) {
			break
		}
	}
	s.waits.wake() // grants are made by the tick, and it is durable now
	return err
}

// Now is the broker time.
func (s *Service) Now() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.core.b.Now()
}

// Start starts the ticker (with Speed > 0). Serve calls it.
func (s *Service) Start() {
	s.startOnce.Do(func() {
		if s.opts.Speed <= 0 {
			return
		}
		period := time.Duration(float64(time.Second) / s.opts.Speed)
		s.wg.Add(1)
		go s.tickLoop(max(period, time.Microsecond))
	})
}

// tickLoop ticks once per period. A time.Ticker drops ticks the loop was
// too slow for, so a loaded service slows its clock down instead of
// catching up in a burst that agents could not react to; clockWatch says
// so in the log and the metrics.
func (s *Service) tickLoop(period time.Duration) {
	defer s.wg.Done()
	tk := time.NewTicker(period)
	defer tk.Stop()
	watch := newClockWatch(s.opts.Speed, time.Now())
	for {
		select {
		case <-s.stop:
			return
		case <-tk.C:
			if s.tickHook != nil {
				s.tickHook()
			}
			if err := s.Tick(); err != nil && s.Failed() != nil {
				return
			}
			if rate, behind := watch.tick(time.Now()); rate >= 0 {
				s.clock.observe(rate, behind)
				if behind && watch.shouldWarn() {
					s.log.Warn("the broker clock is falling behind --speed: ticks take longer than their period "+
						"(each waits for its fsync with --data-dir); agents see a slower clock",
						"speed", s.opts.Speed, "achieved", math.Round(rate*10)/10)
				}
			}
		}
	}
}

// Close stops the ticker, makes the journal file durable and closes it.
// Requests after Close get 503.
func (s *Service) Close() error {
	s.closeOnce.Do(func() {
		close(s.stop)
		s.wg.Wait()
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		s.snapWG.Wait()
		if s.wal != nil {
			s.closeErr = s.wal.close()
		}
	})
	return s.closeErr
}

// Server timeouts: no client can hold a connection open by sending or
// reading slowly; idling is bounded by Options.IdleTimeout and the
// connection limit.
const (
	readHeaderTimeout = 5 * time.Second
	readTimeout       = 15 * time.Second
	writeTimeout      = 30 * time.Second
	shutdownTimeout   = 10 * time.Second
)

// Serve serves the API on ln until ctx ends or the service fails, then
// shuts down gracefully: it stops accepting, lets requests in flight
// finish (up to 10 s), stops the ticker and closes the journal file.
func (s *Service) Serve(ctx context.Context, ln net.Listener) error {
	fdLimit := openFileLimit()
	maxConns, err := EffectiveMaxConns(s.opts.MaxConns, fdLimit)
	if err != nil {
		s.Close()
		return fmt.Errorf("service: %w", err)
	}
	if s.opts.MaxConns > maxConns {
		s.log.Warn("connection limit lowered to fit the descriptor limit", "asked", s.opts.MaxConns, "limit", maxConns, "ulimit_n", fdLimit)
	}
	lim := newConnLimiter(ln, maxConns, &s.conns)
	lim.reclaim = s.waits.reclaim
	s.limiter.Store(lim)
	s.setLimits(maxConns)
	s.Start()
	srv := s.httpServer(lim, false)
	srv.RegisterOnShutdown(s.waits.shutdown)
	errc := make(chan error, 2)
	go func() { errc <- srv.Serve(lim) }()
	var adminSrv *http.Server
	if aln := s.opts.AdminListener; aln != nil {
		alim := newConnLimiter(aln, adminMaxConns, &connStats{})
		adminSrv = s.httpServer(alim, true)
		adminSrv.RegisterOnShutdown(s.waits.shutdown)
		go func() { errc <- adminSrv.Serve(alim) }()
		s.log.Info("administrator listener", "addr", aln.Addr().String())
	}
	var runErr error
	select {
	case <-ctx.Done():
		s.log.Info("shutting down")
	case <-s.failCh:
		runErr = s.Failed()
	case err := <-errc:
		if !errors.Is(err, http.ErrServerClosed) {
			runErr = err
		}
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	var down sync.WaitGroup
	for _, hs := range []*http.Server{srv, adminSrv} {
		if hs != nil {
			down.Go(func() {
				if err := hs.Shutdown(sctx); err != nil {
					hs.Close()
				}
			})
		}
	}
	down.Wait()
	if err := s.Close(); err != nil && runErr == nil {
		runErr = err
	}
	if runErr == nil {
		s.log.Info("stopped", "t", s.Now())
	}
	return runErr
}

// adminMaxConns caps the administrator listener's connections (its idle
// ones are shed first, like the main listener's).
const adminMaxConns = 64

// httpServer is the http.Server for one listener; admin marks the
// administrator's own, on which a campaign token is refused.
func (s *Service) httpServer(lim *connLimiter, admin bool) *http.Server {
	return &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       s.opts.IdleTimeout,
		ConnState:         lim.ConnState,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			ctx = context.WithValue(ctx, connKey{}, c)
			if admin {
				ctx = context.WithValue(ctx, adminConnKey{}, true)
			}
			return ctx
		},
		MaxHeaderBytes: 64 << 10,
		ErrorLog:       log.New(logWriter{s.log}, "", 0),
	}
}

// adminConnKey marks a request that came in on Options.AdminListener.
type adminConnKey struct{}

func hexHash(h [32]byte) string { return hex.EncodeToString(h[:]) }
