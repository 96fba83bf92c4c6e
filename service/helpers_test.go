package service_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bursar-hpc/bursar/client"
	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/service"
)

const adminToken = "test-admin-token-0123456789"

func testConfig() policy.Config {
	return policy.Config{Pool: 512, Grace: policy.DefaultGrace, IOCapacity: 28, InferenceCapacity: 5000}
}

// lockedBuffer is a log sink the race detector accepts.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// env is one service under test with an administrator client.
type env struct {
	svc   *service.Service
	url   string
	admin *client.Client
	logs  *lockedBuffer
}

// newEnv starts a service behind httptest. With opts.Speed 0 the test
// advances the broker with svc.Tick.
func newEnv(t testing.TB, opts service.Options) *env {
	t.Helper()
	if opts.Broker.Pool == 0 {
		opts.Broker = testConfig()
	}
	if opts.AdminToken == "" {
		opts.AdminToken = adminToken
	}
	logs := &lockedBuffer{}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	svc, err := service.New(opts)
	require.NoError(t, err)
	svc.Start()
	srv := httptest.NewServer(svc.Handler())
	t.Cleanup(func() {
		srv.Close()
		require.NoError(t, svc.Close())
	})
	admin, err := client.New(srv.URL, opts.AdminToken)
	require.NoError(t, err)
	return &env{svc: svc, url: srv.URL, admin: admin, logs: logs}
}

// serveEnv runs the service the way `bursar serve` does (Serve on a
// loopback listener, with its timeouts). stop shuts it down gracefully; it
// runs at cleanup too.
func serveEnv(t testing.TB, opts service.Options) (e *env, stop func()) {
	t.Helper()
	if opts.Broker.Pool == 0 {
		opts.Broker = testConfig()
	}
	if opts.AdminToken == "" {
		opts.AdminToken = adminToken
	}
	svc, err := service.New(opts)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- svc.Serve(ctx, ln) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			require.NoError(t, <-done)
		})
	}
	t.Cleanup(stop)
	url := "http://" + ln.Addr().String()
	admin, err := client.New(url, opts.AdminToken, client.WithHTTPClient(pooledClient()))
	require.NoError(t, err)
	return &env{svc: svc, url: url, admin: admin}, stop
}

// pooledClient keeps enough idle connections for many concurrent agents,
// so that a load test does not churn through ephemeral ports.
func pooledClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 256, 256
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

func spec(name string) client.CampaignSpec {
	return client.CampaignSpec{Name: name, Budget: 1000, Guaranteed: 16, Sustained: 32, BurstCeiling: 64, Bucket: 10000,
		Class: client.ClassAgentBurst,
		IO:    &client.FlowSpec{Rate: 2, Bucket: 20, Ceiling: 4}, Inference: &client.FlowSpec{Rate: 500, Bucket: 5000, Ceiling: 1000}}
}

// register registers a campaign and returns its client.
func (e *env) register(t testing.TB, s client.CampaignSpec) *client.Client {
	t.Helper()
	reg, err := e.admin.Register(context.Background(), s)
	require.NoError(t, err)
	return e.admin.WithToken(reg.Token)
}

// raw sends one request and returns the status and body.
func raw(t testing.TB, url, method, path, token, body string) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url+path, rd)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, b
}

func readWAL(t testing.TB, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "bursar.wal"))
	require.NoError(t, err)
	return string(b)
}

func serviceOptionsWithDir(t testing.TB) service.Options {
	return service.Options{DataDir: t.TempDir()}
}

func newRawRequest(url, method, path, token string) (*http.Request, error) {
	req, err := http.NewRequest(method, url+path, nil)
	if err != nil {
		return nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return req, nil
}

// do sends req and returns the answer with its body read.
func do(t testing.TB, req *http.Request) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, b
}

// rawExchange writes req on a new loopback connection (half-closing it
// after when closeWrite) and returns what comes back within 5 s.
func rawExchange(t testing.TB, addr, req string, closeWrite bool) string {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer conn.Close()
	_, err = conn.Write([]byte(req))
	require.NoError(t, err)
	if closeWrite {
		require.NoError(t, conn.(*net.TCPConn).CloseWrite())
	}
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(5*time.Second)))
	b, _ := io.ReadAll(conn)
	return string(b)
}
