//go:build unix

package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bursar-hpc/bursar/client"
)

// BenchmarkLeaseGate times the gate on loopback: from the moment the
// wrapper says its request is filed to the first byte the command writes
// (request → start), and from the wrapper's own start to that byte
// (including its start-up, the watchdog's and the request), and from the
// wrapper's "granted" line to that byte (what the wrapper adds after the
// grant), for an immediate grant (a free pool). The broker admits at its
// next tick, so at --speed S the grant comes 0 to 1/S s after the request:
// the wait for the tick is part of the figure, and sets its floor at low
// speeds; with --admit-on-request the request's own operation grants it. Runs one after another would all file just after a tick (each
// ends at one), so each starts after a pause that spreads the requests
// evenly over the tick period.
//
//	go test ./cmd/bursar -run '^$' -bench LeaseGate -benchtime 40x
//
// $BURSAR_LEASE_BENCH_BIN runs another wrapper binary against the same
// server (e.g. an older build, to compare).
func BenchmarkLeaseGate(b *testing.B) {
	wrapper := bin
	if w := os.Getenv("BURSAR_LEASE_BENCH_BIN"); w != "" {
		wrapper = w
	}
	for _, c := range []struct {
		speed     int
		onRequest bool
	}{{1, false}, {10, false}, {100, false}, {1, true}} {
		speed := c.speed
		name := fmt.Sprintf("speed=%d", speed)
		args := []string{"--admin-token-file", "", "--speed", strconv.Itoa(speed), "--pool", "512", "--write-rate", "-1"}
		if c.onRequest {
			name += "/admit-on-request"
			args = append(args, "--admit-on-request")
		}
		b.Run(name, func(b *testing.B) {
			t := &testing.T{}
			args[1] = tokenFile(t)
			p := startServe(t, cleanEnv(), args...)
			defer p.cmd.Process.Kill()
			admin, err := client.New(p.url, testToken)
			require.NoError(b, err)
			reg, err := admin.Register(context.Background(), client.CampaignSpec{Name: "gate", Budget: 1e12, Guaranteed: 0,
				Sustained: 512, BurstCeiling: 512, Bucket: 1e9, Class: client.ClassAgentBurst})
			require.NoError(b, err)
			var fromFiled, fromStart, fromGrant []time.Duration
			period := time.Second / time.Duration(speed)
			b.ResetTimer()
			for i := range b.N {
				b.StopTimer()
				time.Sleep(period * time.Duration((i*7)%10) / 10)
				b.StartTimer()
				filed, granted, started, begun := runGate(b, wrapper, p.url, reg.Token)
				fromFiled = append(fromFiled, started.Sub(filed))
				fromStart = append(fromStart, started.Sub(begun))
				fromGrant = append(fromGrant, started.Sub(granted))
			}
			b.StopTimer()
			report := func(name string, d []time.Duration) {
				slices.Sort(d)
				q := func(f float64) float64 {
					return float64(d[min(len(d)-1, int(f*float64(len(d))))].Microseconds()) / 1000
				}
				b.ReportMetric(q(0.5), name+"-p50-ms")
				b.ReportMetric(q(0.99), name+"-p99-ms")
			}
			report("request→start", fromFiled)
			report("wrapper→start", fromStart)
			report("granted→start", fromGrant)
		})
	}
}

// runGate runs one `bursar lease -- echo started` and returns when the
// wrapper began, said its request was filed, and the command wrote.
func runGate(b *testing.B, wrapper, url, token string) (filed, granted, started, begun time.Time) {
	b.Helper()
	cmd := exec.Command(wrapper, "lease", "--server", url, "--campaign", "gate", "--gpus", "1", "--duration", "600",
		"--expiry-notice", "0", "--", "echo", "started")
	cmd.Env = cleanEnv("BURSAR_TOKEN=" + token)
	stdout, err := cmd.StdoutPipe()
	require.NoError(b, err)
	stderr, err := cmd.StderrPipe()
	require.NoError(b, err)
	filedc, grantedc := make(chan time.Time, 1), make(chan time.Time, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			switch l := sc.Text(); {
			case strings.Contains(l, "filed at"):
				filedc <- time.Now()
			case strings.Contains(l, "granted lease"):
				grantedc <- time.Now()
			}
		}
	}()
	begun = time.Now()
	require.NoError(b, cmd.Start())
	var one [1]byte
	_, err = io.ReadFull(stdout, one[:])
	started = time.Now()
	require.NoError(b, err, "the command wrote")
	_, _ = io.Copy(io.Discard, stdout)
	require.NoError(b, cmd.Wait())
	for _, c := range []struct {
		ch  chan time.Time
		at  *time.Time
		say string
	}{{filedc, &filed, "filed"}, {grantedc, &granted, "granted"}} {
		select {
		case *c.at = <-c.ch:
		case <-time.After(5 * time.Second):
			b.Fatalf("no %q line", c.say)
		}
	}
	return filed, granted, started, begun
}
