package interrupt

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
)

// received is the number of the last signal a Context caught, 0 if none.
var received atomic.Int32

// Context is parent cancelled when SIGINT or SIGTERM arrives (its cause
// names the signal), until stop is called; stop also releases the
// signals, so a second Ctrl-C after it ends the program as usual.
func Context(parent context.Context) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(parent)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-sigs:
			if n, ok := s.(syscall.Signal); ok {
				received.Store(int32(n))
			}
			cancel(errors.New(s.String() + " signal received"))
		case <-done:
		}
	}()
	var once sync.Once
	return ctx, func() {
		once.Do(func() {
			signal.Stop(sigs)
			close(done)
			cancel(context.Canceled)
		})
	}
}

// Status is the exit status for a command that would exit with code: a
// failure (code not 0) after a Context caught a signal is 128 plus the
// signal's number; anything else is code itself. A command that stops
// cleanly on the signal (serve shutting down) still exits 0.
func Status(code int) int {
	if n := received.Load(); n != 0 && code != 0 {
		return 128 + int(n)
	}
	return code
}
