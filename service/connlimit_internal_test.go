package service

import (
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEffectiveMaxConns(t *testing.T) {
	for _, c := range []struct{ want, fd, got int }{
		{0, 0, DefaultMaxConns},
		{0, 2048, 2048 - 64},
		{100, 2048, 100},
		{5000, 1024, 960},
		{0, 1 << 20, DefaultMaxConns},
	} {
		got, err := EffectiveMaxConns(c.want, c.fd)
		require.NoError(t, err)
		assert.Equal(t, c.got, got, "want %d under %d", c.want, c.fd)
	}
	_, err := EffectiveMaxConns(0, 70)
	assert.ErrorContains(t, err, "ulimit -n 70")
	_, err = EffectiveMaxConns(-1, 0)
	assert.Error(t, err)
}

// TestConnLimiterShedsLongestIdle: at the cap the connection idle longest
// goes, a busy one never does, and with every connection busy the new one
// is closed.
func TestConnLimiterShedsLongestIdle(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var st connStats
	l := newConnLimiter(ln, 3, &st)
	l.grace = 0 // the idle order alone; TestConnLimiterSparesFresh has the grace
	defer l.Close()
	accept := func() (server, peer net.Conn) { return acceptPair(t, ln, l) }
	closed := func(peer net.Conn) bool {
		require.NoError(t, peer.SetReadDeadline(time.Now().Add(2*time.Second)))
		_, err := peer.Read(make([]byte, 1))
		return err != nil && !isTimeout(err)
	}
	a, pa := accept()
	b, pb := accept()
	c, pc := accept()
	l.ConnState(a, http.StateActive)
	l.ConnState(b, http.StateActive)
	l.ConnState(b, http.StateIdle) // b idle after c was accepted: c is idle longer
	_, pd := accept()
	assert.True(t, closed(pc), "c, silent since its accept, was idle longest")
	assert.Equal(t, int64(1), st.shedIdle.Load())
	_, pe := accept()
	assert.True(t, closed(pb))
	assert.Equal(t, int64(3), st.open.Load())
	// Now a (busy), d and e (new). Make them all busy and trusted.
	for s := range l.conns {
		l.ConnState(s, http.StateActive)
		l.trust(s)
	}
	peer, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	go func() { _, _ = l.Accept() }()
	assert.True(t, closed(peer), "every connection busy and trusted: the new one is closed")
	require.Eventually(t, func() bool { return st.shedNew.Load() == 1 }, 2*time.Second, 10*time.Millisecond)
	for _, p := range []net.Conn{pa, pd, pe} {
		p.Close()
	}
	_ = c
}

// TestConnLimiterSparesFresh: at the cap a new connection that has not
// had the time to send its request is spared while a served one is idle,
// even one idle for less time; once past the grace it is shed first again
// (issue 34 §1: the operator's new connection was the "longest idle" under
// a storm of reconnecting pollers).
func TestConnLimiterSparesFresh(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var st connStats
	l := newConnLimiter(ln, 3, &st)
	l.grace = 300 * time.Millisecond
	defer l.Close()
	accept := func() (server, peer net.Conn) { return acceptPair(t, ln, l) }
	present := func(c net.Conn) bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		_, ok := l.conns[c]
		return ok
	}
	a, pa := accept()
	b, pb := accept() // the operator's: silent so far
	c, pc := accept()
	l.ConnState(a, http.StateActive)
	l.trust(a)
	l.ConnState(a, http.StateIdle) // served, idle for less time than b
	d, pd := accept()
	assert.False(t, present(a), "the served connection goes")
	assert.True(t, present(b), "the fresh one is spared")
	time.Sleep(l.grace + 50*time.Millisecond)
	_, pe := accept()
	assert.False(t, present(b), "past the grace, the longest idle goes again")
	assert.True(t, present(c) && present(d))
	for _, p := range []net.Conn{pa, pb, pc, pd, pe} {
		p.Close()
	}
}

// TestConnLimiterBoundsStrangers: connections on which nothing has
// authenticated hold at most three quarters of the cap, busy or not; a
// new connection beyond that closes the oldest stranger, and trusted
// connections are never shed while busy.
func TestConnLimiterBoundsStrangers(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var st connStats
	l := newConnLimiter(ln, 8, &st)
	defer l.Close()
	require.Equal(t, 6, l.strangerMax)
	type pair struct{ server, peer net.Conn }
	accept := func() pair {
		peer, err := net.Dial("tcp", ln.Addr().String())
		require.NoError(t, err)
		server, err := l.Accept()
		require.NoError(t, err)
		return pair{server, peer}
	}
	var all []pair
	defer func() {
		for _, p := range all {
			p.peer.Close()
		}
	}()
	// Two trusted busy connections (an admin, an agent).
	for range 2 {
		p := accept()
		all = append(all, p)
		l.ConnState(p.server, http.StateActive)
		l.trust(p.server)
	}
	// Strangers, each with a request in flight (a dripped body).
	for i := range 20 {
		p := accept()
		all = append(all, p)
		l.ConnState(p.server, http.StateActive)
		assert.LessOrEqual(t, st.strangers.Load(), int64(6), "after stranger %d", i)
		assert.LessOrEqual(t, st.open.Load(), int64(8))
	}
	assert.Equal(t, int64(14), st.shedBusy.Load())
	for _, p := range all[:2] {
		_, ok := l.conns[p.server]
		assert.True(t, ok, "a trusted busy connection was shed")
	}
	// A newcomer (an administrator on a new connection) still gets in.
	p := accept()
	all = append(all, p)
	_, ok := l.conns[p.server]
	assert.True(t, ok)
	assert.Zero(t, st.shedNew.Load())
}

// acceptPair dials the limiter's listener and accepts through it: the
// server's end and the peer's.
func acceptPair(t *testing.T, ln net.Listener, l *connLimiter) (server, peer net.Conn) {
	t.Helper()
	peer, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	server, err = l.Accept()
	require.NoError(t, err)
	return server, peer
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}
