package main

import (
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestServeSpeedRange(t *testing.T) {
	for _, sp := range []string{"1e-11", "0.0005", "-3", "100001", "NaN"} {
		_, stderr, code := run(t, cleanEnv("BURSAR_ADMIN_TOKEN="+testToken), "serve", "--listen", "127.0.0.1:0", "--speed", sp)
		assert.Equal(t, 1, code, sp)
		assert.Contains(t, stderr, "--speed: speed must be between 0.001 and 100000", sp)
	}
}

// TestInsecureDevDecidedByBoundAddress: the check looks at the socket, not
// at the spelling of --listen.
func TestInsecureDevDecidedByBoundAddress(t *testing.T) {
	assert.True(t, boundToLoopback(&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}))
	assert.True(t, boundToLoopback(&net.TCPAddr{IP: net.IPv6loopback}))
	assert.False(t, boundToLoopback(&net.TCPAddr{IP: net.IPv4zero}))
	assert.False(t, boundToLoopback(&net.TCPAddr{IP: net.IPv4(10, 1, 2, 3)}))
	assert.False(t, boundToLoopback(&net.UnixAddr{Name: "/x"}))
	for _, addr := range []string{"0.0.0.0:0", "[::]:0", ":0"} {
		_, stderr, code := run(t, cleanEnv(), "serve", "--insecure-dev", "--listen", addr)
		assert.Equal(t, 1, code, addr)
		assert.Contains(t, stderr, "loopback addresses only", addr)
	}
}

// TestNoSecretBeforeValidation: a start that is refused prints no
// made-up administrator token (issue 21: --pool -1 --insecure-dev used
// to print it, then reject the pool).
func TestNoSecretBeforeValidation(t *testing.T) {
	for _, args := range [][]string{
		{"--pool", "-1"},
		{"--grace", "-5"},
		{"--speed", "0"},
		{"--data-dir", "/proc/no/such/dir"},
	} {
		_, stderr, code := run(t, cleanEnv(), append([]string{"serve", "--insecure-dev", "--listen", "127.0.0.1:0"}, args...)...)
		assert.Equal(t, 1, code, "%v", args)
		assert.NotContains(t, stderr, "BURSAR_ADMIN_TOKEN=", "%v: %s", args, stderr)
	}
}
