package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bursar-hpc/bursar/client"
	"github.com/bursar-hpc/bursar/internal/testlong"
)

// The test binary doubles as a launcher that lowers the descriptor limit
// (soft and hard, so that the Go runtime of the child cannot raise it
// again) and then becomes `bursar serve`: the limit is in force from the
// first instruction of the service, with no prlimit(1) needed.
const (
	limitEnv = "BURSAR_TEST_LAUNCH_NOFILE"
	execEnv  = "BURSAR_TEST_LAUNCH_EXEC"
)

// execLimited runs the launcher when the environment asks for it; it
// returns only when it does not (or exits on failure).
func execLimited() bool {
	n, path := os.Getenv(limitEnv), os.Getenv(execEnv)
	if n == "" || path == "" {
		return false
	}
	lim, err := strconv.ParseUint(n, 10, 64)
	if err == nil {
		err = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: lim, Max: lim})
	}
	if err == nil {
		env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
			return strings.HasPrefix(kv, limitEnv+"=") || strings.HasPrefix(kv, execEnv+"=")
		})
		err = syscall.Exec(path, append([]string{path}, os.Args[1:]...), env)
	}
	fmt.Fprintln(os.Stderr, "launcher:", err)
	os.Exit(2)
	return true
}

// startServeLimited starts `bursar serve` under ulimit -n nofile.
func startServeLimited(t *testing.T, nofile int, env []string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"serve", "--listen", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(env, limitEnv+"="+strconv.Itoa(nofile), execEnv+"="+bin)
	return startCmd(t, cmd)
}

var metricLine = regexp.MustCompile(`(?m)^(bursar_\w+) (\S+)$`)

func metrics(t *testing.T, url string) map[string]float64 {
	t.Helper()
	return metricsVia(t, http.DefaultClient, url)
}

// metricsVia reads the gauges with hc (e.g. over the administrator's
// socket, which a flood of the main listener cannot crowd out).
func metricsVia(t *testing.T, hc *http.Client, url string) map[string]float64 {
	t.Helper()
	resp, err := hc.Get(url + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	out := map[string]float64{}
	for _, m := range metricLine.FindAllStringSubmatch(string(b), -1) {
		v, err := strconv.ParseFloat(m[2], 64)
		require.NoError(t, err)
		out[m[1]] = v
	}
	return out
}

// TestIdleFloodUnderDescriptorLimit: 3,000 idle connections (half silent
// since the handshake, half kept alive after a /healthz) against a service
// limited to 2,048 descriptors. The service must not run out of
// descriptors, and a campaign reading its supply throughout sees no
// failure and a p99 under 100 ms.
func TestIdleFloodUnderDescriptorLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("opens 3,000 connections")
	}
	const nofile, flood = 2048, 3000
	p := startServeLimited(t, nofile, cleanEnv(), "--admin-token-file", tokenFile(t), "--speed", "10")
	require.Eventually(t, func() bool { return strings.Contains(p.stderr.String(), "connection limit lowered") },
		10*time.Second, 20*time.Millisecond, "%s", p.stderr)
	m := metrics(t, p.url)
	require.Equal(t, float64(nofile-64), m["bursar_connections_limit"])

	ctx := context.Background()
	admin, err := client.New(p.url, testToken)
	require.NoError(t, err)
	reg, err := admin.Register(ctx, client.CampaignSpec{Name: "steady", Budget: 1e6, Guaranteed: 8, Sustained: 8,
		BurstCeiling: 16, Bucket: 1000, Class: client.ClassAgentBurst})
	require.NoError(t, err)
	tr := &http.Transport{MaxIdleConnsPerHost: 2}
	steady, err := client.New(p.url, reg.Token, client.WithHTTPClient(&http.Client{Transport: tr, Timeout: 10 * time.Second}))
	require.NoError(t, err)
	_, err = steady.Supply(ctx, "steady")
	require.NoError(t, err)

	addr := strings.TrimPrefix(p.url, "http://")
	var mu sync.Mutex
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	floodDone := make(chan struct{})
	go func() {
		defer close(floodDone)
		var wg sync.WaitGroup
		for w := range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < flood; i += 16 {
					c, err := net.DialTimeout("tcp", addr, 2*time.Second)
					if err != nil {
						continue // a full backlog is the flood's problem
					}
					if i%2 == 0 {
						_, _ = c.Write([]byte("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"))
					}
					mu.Lock()
					held = append(held, c)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
	}()

	var lat []time.Duration
	var failures []error
	deadline := time.Now().Add(20 * time.Second)
	flooding := true
	for extra := 0; flooding || extra < 400; {
		select {
		case <-floodDone:
			flooding = false
		default:
		}
		if !flooding {
			extra++
		}
		if time.Now().After(deadline) {
			break
		}
		start := time.Now()
		_, err := steady.Supply(ctx, "steady")
		lat = append(lat, time.Since(start))
		if err != nil {
			failures = append(failures, err)
		}
		time.Sleep(2 * time.Millisecond)
	}
	require.False(t, flooding, "the flood did not finish in time")
	mu.Lock()
	opened := len(held)
	mu.Unlock()
	m = metrics(t, p.url)
	t.Logf("flood: %d connections opened; steady client: %d requests; metrics %v", opened, len(lat), m)
	assert.Empty(t, failures)
	slices.Sort(lat)
	p99 := lat[len(lat)*99/100]
	t.Logf("steady client p50 %v p99 %v max %v; slowest %v", lat[len(lat)/2], p99, lat[len(lat)-1], lat[max(0, len(lat)-8):])
	// The 100 ms bound is a latency target: it is asserted in the long run
	// (BURSAR_LONG=1, a plain build, .ci/run), not under the README's
	// race-built suite, where this test shares two cores with every other
	// package's tests and measures the machine as much as the service.
	if testlong.Enabled() {
		assert.Less(t, p99, 100*time.Millisecond)
	}
	assert.Greater(t, opened, nofile, "the flood went past the descriptor limit")
	assert.Greater(t, m["bursar_connections_shed_idle_total"], 0.0)
	assert.LessOrEqual(t, m["bursar_connections_open"], m["bursar_connections_limit"])
	assert.NotContains(t, p.stderr.String(), "too many open files")
}

// rssKB reads a process's resident set size from /proc.
func rssKB(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	m := regexp.MustCompile(`(?m)^VmRSS:\s+(\d+) kB`).FindSubmatch(b)
	require.NotNil(t, m)
	n, err := strconv.Atoi(string(m[1]))
	require.NoError(t, err)
	return n
}

// TestStrangerFloodAdminServed: the real binary under ulimit -n 2048 (a
// cap of 1,984 connections) with 2,500 connections of strangers dripping
// their headers or bodies a byte a second, reconnecting when shed. All 20
// administrator requests, each on a new connection, succeed; strangers
// never hold more than three quarters of the cap; after the flood the
// memory it took is returned to the OS.
func TestStrangerFloodAdminServed(t *testing.T) {
	if testing.Short() {
		t.Skip("opens 2,500 connections")
	}
	const nofile, flood = 2048, 2500
	p := startServeLimited(t, nofile, cleanEnv(), "--admin-token-file", tokenFile(t), "--speed", "10")
	require.Eventually(t, func() bool { return strings.Contains(p.stderr.String(), "connection limit lowered") },
		10*time.Second, 20*time.Millisecond, "%s", p.stderr)
	pid := p.cmd.Process.Pid
	rssStart := rssKB(t, pid)
	addr := strings.TrimPrefix(p.url, "http://")
	heads := []string{
		"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Pad: ",
		"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Pad: ",
		"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Pad: ",
		"POST /v1/campaigns HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n",
		"GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n",
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var opened atomic.Int64
	for i := range flood {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				c, err := net.DialTimeout("tcp", addr, 2*time.Second)
				if err != nil {
					time.Sleep(100 * time.Millisecond)
					continue
				}
				opened.Add(1)
				_, err = c.Write([]byte(heads[i%len(heads)]))
				for err == nil {
					select {
					case <-stop:
						c.Close()
						return
					case <-time.After(time.Second):
					}
					_, err = c.Write([]byte("x"))
				}
				c.Close()
			}
		}()
	}
	stopped := false
	halt := func() {
		if !stopped {
			stopped = true
			close(stop)
			wg.Wait()
		}
	}
	defer halt()
	require.Eventually(t, func() bool { return opened.Load() >= flood }, 30*time.Second, 50*time.Millisecond)
	time.Sleep(time.Second)
	rssPeak := rssKB(t, pid)

	ctx := context.Background()
	tr := &http.Transport{DisableKeepAlives: true}
	admin, err := client.New(p.url, testToken, client.WithHTTPClient(&http.Client{Transport: tr, Timeout: 10 * time.Second}))
	require.NoError(t, err)
	ok := 0
	var errs []error
	for range 20 {
		if _, err := admin.Campaigns(ctx); err != nil {
			errs = append(errs, err)
		} else {
			ok++
		}
	}
	m := metrics(t, p.url)
	rssPeak = max(rssPeak, rssKB(t, pid))
	halt()
	assert.Equal(t, 20, ok, "%v", errs)
	assert.LessOrEqual(t, m["bursar_connections_strangers"], m["bursar_connections_limit"]*3/4)
	assert.LessOrEqual(t, m["bursar_connections_open"], m["bursar_connections_limit"])
	// The flood over, the freed memory goes back to the OS.
	require.Eventually(t, func() bool { return metrics(t, p.url)["bursar_memory_released_total"] >= 1 },
		20*time.Second, 100*time.Millisecond)
	time.Sleep(500 * time.Millisecond)
	rssAfter := rssKB(t, pid)
	t.Logf("stranger flood: %d connections opened; metrics during %v; RSS start %d kB, peak %d kB, after %d kB",
		opened.Load(), m, rssStart, rssPeak, rssAfter)
	assert.Greater(t, m["bursar_connections_shed_idle_total"]+m["bursar_connections_shed_busy_total"], 0.0, "the strangers filled their share")
	assert.Less(t, rssAfter, rssPeak, "memory is returned after the flood")
	assert.NotContains(t, p.stderr.String(), "too many open files")
}
