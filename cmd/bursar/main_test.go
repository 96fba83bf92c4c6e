package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bursar-hpc/bursar/client"
)

// The tests here run the real binary, built once by TestMain, on loopback
// addresses. Every process a test starts is killed at its cleanup.

var bin string

func TestMain(m *testing.M) {
	if execLimited() {
		return
	}
	dir, err := os.MkdirTemp("", "bursar-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "bursar")
	build := exec.Command(goTool(), "build", "-o", bin, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building the bursar binary:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// goTool finds the go command that runs this test: on PATH, or where
// $GOROOT says (the go command sets it for the tests it runs).
func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	if root := os.Getenv("GOROOT"); root != "" {
		return filepath.Join(root, "bin", "go")
	}
	return "go"
}

const testToken = "binary-test-admin-token-0123456789"

// cleanEnv is the environment without any BURSAR_ variable of the caller.
func cleanEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "BURSAR_") {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

func tokenFile(t *testing.T) string {
	p := filepath.Join(t.TempDir(), "admin.token")
	require.NoError(t, os.WriteFile(p, []byte(testToken+"\n"), 0o600))
	return p
}

// syncBuffer collects a child's output for the race detector.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// proc is a running `bursar serve`.
type proc struct {
	cmd    *exec.Cmd
	url    string
	stderr *syncBuffer
	done   chan struct{}
	err    error // Wait's, after done
}

var servingLine = regexp.MustCompile(`serving on (http://127\.0\.0\.1:\d+)`)

// startServe starts `bursar serve --listen 127.0.0.1:0 args...` and waits
// for the line that says where it listens.
func startServe(t *testing.T, env []string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"serve", "--listen", "127.0.0.1:0"}, args...)...)
	cmd.Env = env
	return startCmd(t, cmd)
}

// startCmd starts a prepared `bursar serve` command (see startServe).
func startCmd(t *testing.T, cmd *exec.Cmd) *proc {
	t.Helper()
	p := &proc{cmd: cmd, stderr: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stderr = p.stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if m := servingLine.FindStringSubmatch(sc.Text()); m != nil {
				urls <- m[1]
			}
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.done
	})
	select {
	case p.url = <-urls:
	case <-p.done:
		t.Fatalf("bursar serve exited before serving: %v\n%s", p.err, p.stderr)
	case <-time.After(30 * time.Second):
		t.Fatalf("bursar serve did not start\n%s", p.stderr)
	}
	return p
}

// signal sends sig and waits (bounded) for the process to exit.
func (p *proc) signal(t *testing.T, sig os.Signal) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(sig))
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		t.Fatalf("bursar serve did not exit on %v\n%s", sig, p.stderr)
	}
}

// run runs the binary to completion (bounded).
func run(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = env
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	code = cmd.ProcessState.ExitCode()
	if err != nil && code == 0 {
		code = -1
	}
	return o.String(), e.String(), code
}

func TestHelpTeaches(t *testing.T) {
	env := cleanEnv()
	out, _, code := run(t, env, "--help")
	require.Equal(t, 0, code)
	for _, s := range []string{"serve", "demo", "--selftest", "Quick start", "admin.token"} {
		assert.Contains(t, out, s)
	}
	out, _, code = run(t, env, "serve", "--help")
	require.Equal(t, 0, code)
	for _, s := range []string{"--listen", "127.0.0.1:8642", "--speed", "--data-dir", "--admin-token-file", "BURSAR_ADMIN_TOKEN",
		"--insecure-dev", "SIGTERM", "kill -9", "--pool", "--max-pending", "Examples"} {
		assert.Contains(t, out, s)
	}
	out, _, code = run(t, env, "demo", "--help")
	require.Equal(t, 0, code)
	for _, s := range []string{"--server", "--selftest", "throttled", "non-zero", "Examples"} {
		assert.Contains(t, out, s)
	}
}

func TestServeRefusesWithoutAdminToken(t *testing.T) {
	_, stderr, code := run(t, cleanEnv(), "serve", "--listen", "127.0.0.1:0")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "no administrator token")

	_, stderr, code = run(t, cleanEnv("BURSAR_ADMIN_TOKEN=short"), "serve", "--listen", "127.0.0.1:0")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "at least 16 bytes")

	_, stderr, code = run(t, cleanEnv("BURSAR_ADMIN_TOKEN="+testToken), "serve", "--listen", "127.0.0.1:0", "--admin-token-file", tokenFile(t))
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "given twice")

	_, stderr, code = run(t, cleanEnv(), "serve", "--insecure-dev", "--listen", "0.0.0.0:0")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "loopback")

	_, stderr, code = run(t, cleanEnv("BURSAR_ADMIN_TOKEN="+testToken), "serve", "--listen", "127.0.0.1:0", "--speed", "0")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "--speed")
}

func TestServeInsecureDev(t *testing.T) {
	p := startServe(t, cleanEnv(), "--insecure-dev")
	// The token goes to stderr before the address goes to stdout, but the
	// two pipes are copied by different goroutines: the address can be
	// read here before the token line has reached the buffer.
	tokenLine := regexp.MustCompile(`BURSAR_ADMIN_TOKEN=([0-9a-f]{32})`)
	var m []string
	require.Eventually(t, func() bool { m = tokenLine.FindStringSubmatch(p.stderr.String()); return m != nil },
		10*time.Second, 10*time.Millisecond, "the made-up token is printed: %s", p.stderr)
	admin, err := client.New(p.url, m[1])
	require.NoError(t, err)
	_, err = admin.Campaigns(context.Background())
	require.NoError(t, err)
	p.signal(t, syscall.SIGINT)
	assert.NoError(t, p.err)
}

// TestServeRestart: a graceful stop keeps everything, and the restarted
// process serves the same campaigns, tokens and leases.
func TestServeRestart(t *testing.T) {
	ctx := context.Background()
	dir, tok := t.TempDir(), tokenFile(t)
	args := []string{"--data-dir", dir, "--admin-token-file", tok, "--speed", "50"}
	p := startServe(t, cleanEnv(), args...)

	resp, err := http.Get(p.url + "/openapi.json")
	require.NoError(t, err)
	spec, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, 200, resp.StatusCode)
	assert.Contains(t, string(spec), `"openapi":"3.1.0"`)

	admin, err := client.New(p.url, testToken)
	require.NoError(t, err)
	reg, err := admin.Register(ctx, client.CampaignSpec{Name: "sci", Budget: 100, Guaranteed: 8, Sustained: 8, BurstCeiling: 16, Bucket: 1000, Class: client.ClassAgentBurst})
	require.NoError(t, err)
	sci := admin.WithToken(reg.Token)
	acc, err := sci.Request(ctx, "sci", client.LeaseRequest{GPUs: 8, Duration: 100000})
	require.NoError(t, err)
	g, err := sci.WaitGrant(ctx, "sci", acc.RequestID, 10*time.Millisecond)
	require.NoError(t, err)

	p.signal(t, syscall.SIGTERM)
	require.NoError(t, p.err, "a graceful stop exits 0\n%s", p.stderr)
	assert.Contains(t, p.stderr.String(), "stopped")

	p2 := startServe(t, cleanEnv(), args...)
	sci2, err := client.New(p2.url, reg.Token)
	require.NoError(t, err)
	ls, err := sci2.Leases(ctx, "sci")
	require.NoError(t, err, "the campaign's token still works")
	require.Len(t, ls.Leases, 1)
	assert.Equal(t, g.Lease, ls.Leases[0].ID)

	// One data directory, one process.
	_, stderr, code := run(t, cleanEnv(), append([]string{"serve", "--listen", "127.0.0.1:0"}, args...)...)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "in use by another process")
}

func TestDemoSelftestBinary(t *testing.T) {
	out, stderr, code := run(t, cleanEnv(), "demo", "--selftest")
	require.Equal(t, 0, code, "%s\n%s", out, stderr)
	assert.Contains(t, out, "selftest passed")
}

func TestDemoAgainstServer(t *testing.T) {
	p := startServe(t, cleanEnv(), "--admin-token-file", tokenFile(t), "--speed", "20")
	out, stderr, code := run(t, cleanEnv("BURSAR_ADMIN_TOKEN="+testToken), "demo", "--server", p.url, "--name", "agent-1")
	require.Equal(t, 0, code, "%s\n%s", out, stderr)
	assert.Contains(t, out, "demo done")
	assert.Contains(t, out, "throttled true and true")

	_, stderr, code = run(t, cleanEnv(), "demo", "--server", p.url)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "administrator")
	_, stderr, code = run(t, cleanEnv("BURSAR_ADMIN_TOKEN=wrong-token-but-long-enough"), "demo", "--server", p.url)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "401")
}
