package service

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"path"
	"runtime/debug"
	"time"
)

// MaxBodyBytes is the request body limit: a body of this size or more is
// refused with 413.
const MaxBodyBytes = 1 << 20

// requestInfo travels with a request so that the outer access log can name
// the principal the inner auth middleware found.
type requestInfo struct {
	principal string
}

type requestInfoKey struct{}

func requestInfoOf(ctx context.Context) *requestInfo {
	info, _ := ctx.Value(requestInfoKey{}).(*requestInfo)
	return info
}

// statusWriter records the status of the answer for the access log, and
// closes the connection of a request that brought a body but no valid
// token (see closeStranger).
type statusWriter struct {
	http.ResponseWriter
	status int
	// stranger: the request has a body; once answered without an
	// authenticated principal, its connection is closed.
	stranger bool
	info     *requestInfo
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
		if w.stranger && w.info.principal == "-" {
			w.Header().Set("Connection", "close")
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

// closeStranger ends a request that came with a body and was answered
// without authenticating (a 401, a public route, a 404): net/http would
// otherwise read up to 256 KB of the unread body after the answer to keep
// the connection alive, and someone dripping that body a byte a second
// held the connection for the whole read timeout (issue 22). The answer
// carries Connection: close, and the read deadline is moved to now so that
// draining stops at once.
func closeStranger(w *statusWriter) {
	if w.stranger && w.info.principal == "-" {
		_ = http.NewResponseController(w.ResponseWriter).SetReadDeadline(time.Now())
	}
}

// Unwrap lets http.ResponseController reach the connection (huma sets the
// body read deadline through it).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// writeProblem writes an RFC 9457 problem for answers made outside huma.
func writeProblem(w http.ResponseWriter, status int, detail string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"title": http.StatusText(status), "status": status, "detail": detail,
	})
}

// outer wraps the router: a body limit for every route, the access log
// (method, path, status, principal and time, never a header or a body, so
// no token can reach the log), and a last line of defence that turns a
// panic into a 500 instead of a dropped connection.
func (s *Service) outer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		info := &requestInfo{principal: "-"}
		sw := &statusWriter{ResponseWriter: w, info: info, stranger: r.ContentLength != 0}
		r = r.WithContext(context.WithValue(r.Context(), requestInfoKey{}, info))
		if r.Body != nil {
			// Huma enforces the same limit per operation and answers
			// 413; this covers every other route.
			r.Body = http.MaxBytesReader(sw, r.Body, MaxBodyBytes)
		}
		// ServeMux would answer a path with // or .. with a 307 and an
		// HTML body; the API has exactly one spelling per resource.
		if p := r.URL.Path; p == "" || p[0] != '/' || path.Clean(p) != p {
			writeProblem(sw, http.StatusNotFound, fmt.Sprintf("path %q is not canonical (no //, . or .. segments, no trailing /)", capMessage(p)))
			return
		}
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.log.Error("handler panic", "method", r.Method, "path", r.URL.Path, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
				if sw.status == 0 {
					writeProblem(sw, http.StatusInternalServerError, "internal error")
				}
			}
			closeStranger(sw)
			s.log.Debug("request", "method", r.Method, "path", r.URL.Path, "status", sw.status,
				"principal", info.principal, "duration", time.Since(start))
		}()
		next.ServeHTTP(sw, r)
	})
}

// logWriter adapts the http.Server's error log to slog.
type logWriter struct{ log *slog.Logger }

func (l logWriter) Write(p []byte) (int, error) {
	l.log.Warn("http server", "msg", string(trimNL(p)))
	return len(p), nil
}

func trimNL(p []byte) []byte {
	for len(p) > 0 && (p[len(p)-1] == '\n' || p[len(p)-1] == '\r') {
		p = p[:len(p)-1]
	}
	return p
}
