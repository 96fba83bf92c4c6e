package service

import (
	"container/list"
	"context"
	"fmt"
	"net"
	"net/http"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// Connection limit. Every open connection holds a file descriptor, and a
// process that runs out of them cannot accept, open its journal or answer
// anyone: a flood of idle connections (no token needed, a TCP handshake
// suffices) would take the service down for every campaign. The limiter
// keeps the number of open connections at or under a cap that fits the
// descriptor limit.
//
// Connections are strangers until a request on them authenticates (with
// the administrator's or any campaign's token); then they are trusted.
// Strangers may hold at most strangerShare of the cap, busy or idle: a new
// connection beyond that closes the oldest stranger, even one with a
// request in flight (a slow body dripped by someone without a token, issue
// 22). At the cap the connection idle longest is closed first — one that
// has been served or is older than freshGrace before a new one that has
// not had the time to send its request — then the oldest stranger; a trusted connection with a request in flight is never
// shed, and only when every connection is a busy trusted one is the new one
// closed. A new connection is a stranger, so an administrator or agent
// always gets in, and its first request makes it trusted.
//
// Memory: each connection costs a goroutine stack and read and write
// buffers. When a flood ends (open connections fall to a quarter of their
// peak, from at least releaseAbove), the limiter asks the runtime to return
// freed memory to the OS (debug.FreeOSMemory) instead of waiting for the
// scavenger.

const (
	// DefaultMaxConns is the connection cap unless --max-conns says
	// otherwise; it is lowered to fit the descriptor limit.
	DefaultMaxConns = 8192
	// fdReserve is the descriptors kept back from the cap for the
	// journal, its directory, the listener, the log and the runtime.
	fdReserve = 64
	// minConns is the smallest cap the service runs with.
	minConns = 16
	// freshGrace spares a new connection at the cap while an idle one
	// that is older or has been served can go instead: the client has
	// connected to send a request at once, and under a storm of
	// reconnecting clients (issue 34 §1: a tenant re-sending 600 long
	// polls under a 448-connection cap) the operator's new connection was
	// otherwise the "longest idle" one, shed before its first byte was read.
	freshGrace = 2 * time.Second
	// acceptPatience is how long a new connection waits for room at the
	// cap before it is closed.
	acceptPatience = 500 * time.Millisecond
	// releaseAbove is the peak of open connections after which a fall to
	// a quarter of it returns memory to the OS.
	releaseAbove = 256
)

// strangerMax is how many connections without an authenticated request
// may be open under a cap: three quarters of it, leaving a quarter that
// only trusted connections can hold.
func strangerMax(limit int) int { return max(1, limit-limit/4) }

// EffectiveMaxConns is the cap the service uses for a wanted one (0: the
// default) under a descriptor limit (0: unknown).
func EffectiveMaxConns(want, fdLimit int) (int, error) {
	if want < 0 {
		return 0, fmt.Errorf("the connection limit must not be negative, got %d", want)
	}
	if want == 0 {
		want = DefaultMaxConns
	}
	if fdLimit > 0 && want > fdLimit-fdReserve {
		want = fdLimit - fdReserve
	}
	if want < minConns {
		return 0, fmt.Errorf("the descriptor limit (ulimit -n %d) leaves room for %d connections, fewer than %d: raise it", fdLimit, want, minConns)
	}
	return want, nil
}

// connStats are the limiter's metrics.
type connStats struct {
	open, limit, strangers      atomic.Int64
	shedIdle, shedNew, shedBusy atomic.Int64
	released                    atomic.Int64
	reclaimed                   atomic.Int64
}

// connEntry is the limiter's book on one connection: its place in the
// idle list (nil while busy) and in the strangers list (nil once trusted).
type connEntry struct {
	idle, stranger *list.Element
	born           time.Time // accepted
	served         bool      // a request on it has been answered
}

// fresh reports whether e is a connection not yet given its chance: no
// request answered on it and accepted less than grace ago.
func (e *connEntry) fresh(now time.Time, grace time.Duration) bool {
	return !e.served && now.Sub(e.born) < grace
}

// connLimiter is a listener that enforces the cap; its ConnState method is
// the http.Server's hook.
type connLimiter struct {
	net.Listener
	max, strangerMax int
	stats            *connStats
	// grace is how long a new connection is spared while an older or a
	// kept-alive one can go instead (freshGrace).
	grace time.Duration
	// reclaim, when set, ends one long poll and closes its connection
	// after the answer (waitBoard.reclaim); patience is how long a new
	// connection waits for room; room is signalled when a connection
	// closes or falls idle.
	reclaim  func() bool
	patience time.Duration
	room     chan struct{}

	mu        sync.Mutex
	conns     map[net.Conn]*connEntry
	idle      *list.List // of net.Conn, longest idle first
	strangers *list.List // of net.Conn, oldest first
	peak      int
	releasing atomic.Bool
}

func newConnLimiter(ln net.Listener, max int, stats *connStats) *connLimiter {
	stats.limit.Store(int64(max))
	return &connLimiter{Listener: ln, max: max, strangerMax: strangerMax(max), stats: stats, grace: freshGrace,
		patience: acceptPatience, room: make(chan struct{}, 1),
		conns: map[net.Conn]*connEntry{}, idle: list.New(), strangers: list.New()}
}

// Accept accepts a connection and makes room for it (see above). When
// nothing may be shed — every connection is busy and trusted, or fresh —
// it ends a long poll (reclaim) and waits up to acceptPatience for a
// connection to close or fall idle, accepting nothing else meanwhile: the
// kernel's backlog keeps the newcomers in the order they came, so an
// operator's connection waits its turn instead of losing a race it cannot
// win against a client that reconnects in a loop. Only then is the new
// connection closed.
func (l *connLimiter) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.admit(c) {
			return c, nil
		}
		l.stats.shedNew.Add(1)
		c.Close()
	}
}

// admit books c, shedding a connection if the cap needs it; false when
// no room was found within acceptPatience.
func (l *connLimiter) admit(c net.Conn) bool {
	var deadline time.Time
	reclaimed := false
	for {
		l.mu.Lock()
		now := time.Now()
		victim, ok := l.roomFor(now)
		if ok {
			if victim != nil {
				l.forget(victim)
			}
			// A new connection is an idle stranger until its first
			// request arrives and authenticates.
			l.conns[c] = &connEntry{idle: l.idle.PushBack(c), stranger: l.strangers.PushBack(c), born: now}
			l.peak = max(l.peak, len(l.conns))
			l.count()
			l.mu.Unlock()
			if victim != nil {
				victim.Close()
			}
			return true
		}
		l.mu.Unlock()
		if deadline.IsZero() {
			deadline = now.Add(l.patience)
		}
		if !reclaimed && l.reclaim != nil {
			reclaimed = l.reclaim()
			if reclaimed {
				l.stats.reclaimed.Add(1)
			}
		}
		wait := deadline.Sub(now)
		if wait <= 0 {
			return false
		}
		t := time.NewTimer(wait)
		select {
		case <-l.room:
		case <-t.C:
		}
		t.Stop()
	}
}

// roomFor picks what makes room for a new connection: ok with no victim
// under the cap, ok with the victim to close, or not ok when nothing may
// go; l.mu is held.
func (l *connLimiter) roomFor(now time.Time) (victim net.Conn, ok bool) {
	full := len(l.conns) >= l.max
	if full && l.strangers.Len() < l.strangerMax {
		if v := l.seasonedIdle(now); v != nil {
			l.stats.shedIdle.Add(1)
			return v, true
		}
	}
	if l.strangers.Len() >= l.strangerMax || full && l.strangers.Len() > 0 &&
		!l.conns[l.strangers.Front().Value.(net.Conn)].fresh(now, l.grace) {
		// The oldest stranger; the idle list's front first when it is
		// one (it is idle longest) and not fresh.
		v := l.strangers.Front().Value.(net.Conn)
		if f := l.idle.Front(); f != nil && l.conns[f.Value.(net.Conn)].stranger != nil && !l.conns[f.Value.(net.Conn)].fresh(now, l.grace) {
			v = f.Value.(net.Conn)
		}
		if l.conns[v].idle != nil {
			l.stats.shedIdle.Add(1)
		} else {
			l.stats.shedBusy.Add(1)
		}
		return v, true
	}
	return nil, !full
}

// seasonedIdle is the connection idle longest that is not fresh, nil if
// every idle one is; l.mu is held. The fresh ones are the newest accepted,
// so the scan passes over at most those accepted within the grace.
func (l *connLimiter) seasonedIdle(now time.Time) net.Conn {
	for el := l.idle.Front(); el != nil; el = el.Next() {
		c := el.Value.(net.Conn)
		if !l.conns[c].fresh(now, l.grace) {
			return c
		}
	}
	return nil
}

// signalRoom wakes an Accept waiting for room; l.mu is held.
func (l *connLimiter) signalRoom() {
	select {
	case l.room <- struct{}{}:
	default:
	}
}

// count updates the gauges; l.mu is held.
func (l *connLimiter) count() {
	l.stats.open.Store(int64(len(l.conns)))
	l.stats.strangers.Store(int64(l.strangers.Len()))
}

// forget drops c from the books; l.mu is held.
func (l *connLimiter) forget(c net.Conn) {
	e, ok := l.conns[c]
	if !ok {
		return
	}
	if e.idle != nil {
		l.idle.Remove(e.idle)
	}
	if e.stranger != nil {
		l.strangers.Remove(e.stranger)
	}
	delete(l.conns, c)
	l.count()
	l.signalRoom()
	if l.peak >= releaseAbove && len(l.conns) <= l.peak/4 {
		l.peak = len(l.conns)
		if l.releasing.CompareAndSwap(false, true) {
			go func() {
				defer l.releasing.Store(false)
				debug.FreeOSMemory()
				l.stats.released.Add(1)
			}()
		}
	}
}

// trust marks c as carrying an authenticated request: it no longer counts
// against the strangers' share and is not shed while busy.
func (l *connLimiter) trust(c net.Conn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e, ok := l.conns[c]; ok && e.stranger != nil {
		l.strangers.Remove(e.stranger)
		e.stranger = nil
		l.count()
	}
}

// ConnState follows each connection between busy and idle.
func (l *connLimiter) ConnState(c net.Conn, st http.ConnState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.conns[c]
	if !ok {
		return // shed already
	}
	switch st {
	case http.StateActive:
		if e.idle != nil {
			l.idle.Remove(e.idle)
			e.idle = nil
		}
	case http.StateIdle:
		e.served = true
		if e.idle != nil {
			l.idle.Remove(e.idle)
		}
		e.idle = l.idle.PushBack(c)
		l.signalRoom()
	case http.StateClosed, http.StateHijacked:
		l.forget(c)
	}
}

// connKey carries a request's connection in its context, so that
// authentication can tell the limiter the connection is trusted.
type connKey struct{}

// trustConn marks the connection of an authenticated request as trusted.
func (s *Service) trustConn(ctx context.Context) {
	lim := s.limiter.Load()
	c, ok := ctx.Value(connKey{}).(net.Conn)
	if lim != nil && ok {
		lim.trust(c)
	}
}
