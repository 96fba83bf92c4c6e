package service_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bursar-hpc/bursar/client"
	"github.com/bursar-hpc/bursar/service"
)

// strangerKinds are the ways someone without a token held connections
// open (issue 22, item 2): full POST headers and a body dripped a byte at a
// time, the same on a public route that answers without reading the body
// (the server then drains it for keep-alive), and headers dripped
// (slowloris).
var strangerKinds = []struct {
	name, head string
	dripHead   bool
}{
	{"slow-body-post", "POST /v1/campaigns HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n", false},
	{"slow-body-public", "GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n", false},
	{"slowloris", "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Pad: ", true},
	{"slowloris", "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Pad: ", true},
}

// stranger holds one connection open the given way, reconnecting when the
// server closes it, until stop.
func stranger(addr string, kind int, stop <-chan struct{}, opened *atomic.Int64) {
	k := strangerKinds[kind]
	for {
		select {
		case <-stop:
			return
		default:
		}
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		opened.Add(1)
		head := k.head
		if k.dripHead {
			_, err = c.Write([]byte(head))
		} else {
			_, err = c.Write([]byte(head))
		}
		for err == nil {
			select {
			case <-stop:
				c.Close()
				return
			case <-time.After(200 * time.Millisecond):
			}
			_, err = c.Write([]byte("x"))
		}
		c.Close()
	}
}

var metricValue = regexp.MustCompile(`(?m)^(bursar_\w+) (\S+)$`)

// serviceMetrics reads /metrics. Under a flood of strangers the reader is
// a stranger too and may be shed: it tries again.
func serviceMetrics(t *testing.T, url string) map[string]float64 {
	t.Helper()
	var b []byte
	var err error
	for range 20 {
		var resp *http.Response
		if resp, err = http.Get(url + "/metrics"); err == nil {
			b, err = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		if err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	require.NoError(t, err)
	out := map[string]float64{}
	for _, m := range metricValue.FindAllStringSubmatch(string(b), -1) {
		v, err := strconv.ParseFloat(m[2], 64)
		require.NoError(t, err)
		out[m[1]] = v
	}
	return out
}

// TestStrangersCannotLockOut: with the connection cap full of strangers
// dripping bodies and headers, 20 of 20 administrator requests and 20 of
// 20 campaign requests, each on a new connection, succeed.
func TestStrangersCannotLockOut(t *testing.T) {
	const maxConns, strangers = 64, 160
	e, _ := serveEnv(t, service.Options{MaxConns: maxConns})
	ctx := context.Background()
	reg, err := e.admin.Register(ctx, spec("a"))
	require.NoError(t, err)
	addr := strings.TrimPrefix(e.url, "http://")

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var opened atomic.Int64
	for i := range strangers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stranger(addr, i%len(strangerKinds), stop, &opened)
		}()
	}
	defer func() {
		close(stop)
		wg.Wait()
	}()
	// The cap fills with strangers up to their share: they start being
	// shed.
	require.Eventually(t, func() bool {
		m := serviceMetrics(t, e.url)
		return m["bursar_connections_shed_idle_total"]+m["bursar_connections_shed_busy_total"] > 20
	}, 10*time.Second, 50*time.Millisecond)

	fresh := func(tok string) *client.Client {
		tr := &http.Transport{DisableKeepAlives: true}
		c, err := client.New(e.url, tok, client.WithHTTPClient(&http.Client{Transport: tr, Timeout: 5 * time.Second}))
		require.NoError(t, err)
		return c
	}
	admin, agent := fresh(adminToken), fresh(reg.Token)
	okAdmin, okAgent := 0, 0
	var errs []error
	for range 20 {
		if _, err := admin.Campaigns(ctx); err == nil {
			okAdmin++
		} else {
			errs = append(errs, err)
		}
		if _, err := agent.Supply(ctx, "a"); err == nil {
			okAgent++
		} else {
			errs = append(errs, err)
		}
	}
	m := serviceMetrics(t, e.url)
	t.Logf("strangers opened %d connections; metrics: open %v strangers %v shed busy %v shed idle %v refused %v",
		opened.Load(), m["bursar_connections_open"], m["bursar_connections_strangers"],
		m["bursar_connections_shed_busy_total"], m["bursar_connections_shed_idle_total"], m["bursar_connections_refused_total"])
	assert.Equal(t, 20, okAdmin, "%v", errs)
	assert.Equal(t, 20, okAgent, "%v", errs)
	assert.LessOrEqual(t, m["bursar_connections_open"], float64(maxConns))
	assert.LessOrEqual(t, m["bursar_connections_strangers"], float64(maxConns-maxConns/4))
	assert.Greater(t, opened.Load(), int64(maxConns), "the strangers went past the cap")
}

// TestUnauthenticatedAnswerCloses: a 401 closes the connection rather than
// waiting for the rest of a body no one will read.
func TestUnauthenticatedAnswerCloses(t *testing.T) {
	e, _ := serveEnv(t, service.Options{})
	addr := strings.TrimPrefix(e.url, "http://")
	start := time.Now()
	ans := rawExchange(t, addr, "POST /v1/campaigns HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n{", false)
	assert.True(t, strings.HasPrefix(ans, "HTTP/1.1 401"), "%s", ans)
	assert.Contains(t, strings.ToLower(ans), "connection: close")
	// rawExchange reads to EOF: the server closed without the 15 s read
	// timeout.
	assert.Less(t, time.Since(start), 4*time.Second, fmt.Sprintf("%.200s", ans))
}
