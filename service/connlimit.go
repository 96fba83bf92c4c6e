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
// 22). At the cap the connection idle longest is closed first, then the
// oldest stranger; a trusted connection with a request in flight is never
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
}

// connEntry is the limiter's book on one connection: its place in the
// idle list (nil while busy) and in the strangers list (nil once trusted).
type connEntry struct {
	idle, stranger *list.Element
}

// connLimiter is a listener that enforces the cap; its ConnState method is
// the http.Server's hook.
type connLimiter struct {
	net.Listener
	max, strangerMax int
	stats            *connStats

	mu        sync.Mutex
	conns     map[net.Conn]*connEntry
	idle      *list.List // of net.Conn, longest idle first
	strangers *list.List // of net.Conn, oldest first
	peak      int
	releasing atomic.Bool
}

func newConnLimiter(ln net.Listener, max int, stats *connStats) *connLimiter {
	stats.limit.Store(int64(max))
	return &connLimiter{Listener: ln, max: max, strangerMax: strangerMax(max), stats: stats,
		conns: map[net.Conn]*connEntry{}, idle: list.New(), strangers: list.New()}
}

// Accept accepts a connection and makes room for it (see above), or
// closes it when every connection is a busy trusted one.
func (l *connLimiter) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		l.mu.Lock()
		var victim net.Conn
		switch {
		case len(l.conns) >= l.max && l.idle.Len() > 0:
			victim = l.idle.Front().Value.(net.Conn)
			l.stats.shedIdle.Add(1)
		case l.strangers.Len() >= l.strangerMax || len(l.conns) >= l.max && l.strangers.Len() > 0:
			// The oldest stranger; the idle list's front first when it
			// is one (it is idle longest).
			victim = l.strangers.Front().Value.(net.Conn)
			if f := l.idle.Front(); f != nil && l.conns[f.Value.(net.Conn)].stranger != nil {
				victim = f.Value.(net.Conn)
			}
			if l.conns[victim].idle != nil {
				l.stats.shedIdle.Add(1)
			} else {
				l.stats.shedBusy.Add(1)
			}
		case len(l.conns) >= l.max:
			l.mu.Unlock()
			l.stats.shedNew.Add(1)
			c.Close()
			continue
		}
		if victim != nil {
			l.forget(victim)
		}
		// A new connection is an idle stranger until its first request
		// arrives and authenticates.
		l.conns[c] = &connEntry{idle: l.idle.PushBack(c), stranger: l.strangers.PushBack(c)}
		l.peak = max(l.peak, len(l.conns))
		l.count()
		l.mu.Unlock()
		if victim != nil {
			victim.Close()
		}
		return c, nil
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
		if e.idle != nil {
			l.idle.Remove(e.idle)
		}
		e.idle = l.idle.PushBack(c)
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
