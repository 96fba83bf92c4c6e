package service

import (
	"container/list"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
)

// Connection limit. Every open connection holds a file descriptor, and a
// process that runs out of them cannot accept, open its journal or answer
// anyone: a flood of idle connections (no token needed, a TCP handshake
// suffices) would take the service down for every campaign. The limiter
// keeps the number of open connections at or under a cap that fits the
// descriptor limit, and when a new connection arrives at the cap it sheds
// the connection that has been idle longest (kept alive between requests,
// or accepted and silent since) — a connection with a request in flight is
// never shed. Only when every connection is busy is the new one closed.

const (
	// DefaultMaxConns is the connection cap unless --max-conns says
	// otherwise; it is lowered to fit the descriptor limit.
	DefaultMaxConns = 8192
	// fdReserve is the descriptors kept back from the cap for the
	// journal, its directory, the listener, the log and the runtime.
	fdReserve = 64
	// minConns is the smallest cap the service runs with.
	minConns = 16
)

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
	open, limit       atomic.Int64
	shedIdle, shedNew atomic.Int64
}

// connLimiter is a listener that enforces the cap; its ConnState method is
// the http.Server's hook.
type connLimiter struct {
	net.Listener
	max   int
	stats *connStats

	mu    sync.Mutex
	conns map[net.Conn]*list.Element // nil element: busy
	idle  *list.List                 // of net.Conn, longest idle first
}

func newConnLimiter(ln net.Listener, max int, stats *connStats) *connLimiter {
	stats.limit.Store(int64(max))
	return &connLimiter{Listener: ln, max: max, stats: stats, conns: map[net.Conn]*list.Element{}, idle: list.New()}
}

// Accept accepts a connection, shedding the longest-idle one when the cap
// is reached, or the new one when every connection is busy.
func (l *connLimiter) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		l.mu.Lock()
		var victim net.Conn
		if len(l.conns) >= l.max {
			if front := l.idle.Front(); front != nil {
				victim = front.Value.(net.Conn)
				l.forget(victim)
				l.stats.shedIdle.Add(1)
			} else {
				l.mu.Unlock()
				l.stats.shedNew.Add(1)
				c.Close()
				continue
			}
		}
		// A new connection is idle until its first request arrives.
		l.conns[c] = l.idle.PushBack(c)
		l.stats.open.Store(int64(len(l.conns)))
		l.mu.Unlock()
		if victim != nil {
			victim.Close()
		}
		return c, nil
	}
}

// forget drops c from the books; l.mu is held.
func (l *connLimiter) forget(c net.Conn) {
	if e, ok := l.conns[c]; ok {
		if e != nil {
			l.idle.Remove(e)
		}
		delete(l.conns, c)
		l.stats.open.Store(int64(len(l.conns)))
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
		if e != nil {
			l.idle.Remove(e)
			l.conns[c] = nil
		}
	case http.StateIdle:
		if e != nil {
			l.idle.Remove(e)
		}
		l.conns[c] = l.idle.PushBack(c)
	case http.StateClosed, http.StateHijacked:
		l.forget(c)
	}
}
