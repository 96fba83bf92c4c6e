package service

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/bursar-hpc/bursar/client"
)

// Listening on a Unix socket. On TCP, while the service is down any local
// user can bind its port and receive the bearer tokens agents send; a Unix
// socket is a file, and its mode decides who may connect at all (issue 22).
// `--listen unix:/path/bursar.sock` creates it with --socket-mode (0600:
// the service's own user) from the first instant: the process umask is
// narrowed around bind(2), so there is no moment at which another user
// could connect. A socket file left by a crashed service is removed when
// nothing answers on it; one a live service holds is refused.

// Listen opens the service's listener: TCP host:port, or unix:PATH with
// file mode socketMode (its errors name serve's flags, --listen and
// --socket-mode).
func Listen(addr string, socketMode os.FileMode) (net.Listener, error) {
	path, ok := strings.CutPrefix(addr, client.UnixPrefix)
	if !ok {
		return net.Listen("tcp", addr)
	}
	if path == "" {
		return nil, errors.New("--listen unix: names no socket path")
	}
	if socketMode&^0o777 != 0 || socketMode&0o600 != 0o600 {
		return nil, fmt.Errorf("--socket-mode %04o: the owner needs read and write (0600 at least), and only permission bits count", socketMode)
	}
	if st, err := os.Lstat(path); err == nil {
		if st.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("--listen %s: %s exists and is not a socket", addr, path)
		}
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			c.Close()
			return nil, fmt.Errorf("--listen %s: a service is listening on it already", addr)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("--listen %s: remove the stale socket: %w", addr, err)
		}
	}
	restore := narrowUmask()
	ln, err := net.Listen("unix", path)
	restore()
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(path, socketMode); err != nil {
		ln.Close()
		return nil, fmt.Errorf("--listen %s: %w", addr, err)
	}
	return ln, nil
}

// ParseSocketMode reads an octal file mode such as 0600 or 660.
func ParseSocketMode(s string) (os.FileMode, error) {
	m, err := strconv.ParseUint(s, 8, 32)
	if err != nil {
		return 0, fmt.Errorf("--socket-mode %q: want an octal mode such as 0600", s)
	}
	return os.FileMode(m), nil
}

// IsUnixSocket reports whether a listener is a Unix socket (local by
// construction, so --insecure-dev may use it).
func IsUnixSocket(a net.Addr) bool { return a.Network() == "unix" }
