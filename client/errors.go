package client

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// Error is a non-2xx answer from the service.
type Error struct {
	// Method and Path are the request that failed.
	Method, Path string
	// StatusCode is the HTTP status.
	StatusCode int
	// Problem is the decoded problem body (zero when the body was not one).
	Problem Problem
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s: %d %s", e.Method, e.Path, e.StatusCode, http.StatusText(e.StatusCode))
	if e.Problem.Detail != "" {
		b.WriteString(": ")
		b.WriteString(e.Problem.Detail)
	}
	for _, d := range e.Problem.Errors {
		b.WriteString("; ")
		if d.Location != "" {
			b.WriteString(d.Location)
			b.WriteString(": ")
		}
		b.WriteString(d.Message)
	}
	return b.String()
}

// Locations lists the fields the problem names (e.g. "body.gpus").
func (e *Error) Locations() []string {
	var out []string
	for _, d := range e.Problem.Errors {
		if d.Location != "" {
			out = append(out, d.Location)
		}
	}
	return out
}

// Sentinels for the statuses an agent reacts to; test with errors.Is.
var (
	ErrUnauthorized    = errors.New("missing or invalid token")
	ErrForbidden       = errors.New("token may not access this resource")
	ErrNotFound        = errors.New("not found")
	ErrBudgetExhausted = errors.New("budget exhausted")
	ErrConflict        = errors.New("conflict")
	ErrTooManyPending  = errors.New("too many pending requests")
	ErrUnavailable     = errors.New("service unavailable")
)

var statusSentinel = map[int]error{
	http.StatusUnauthorized:       ErrUnauthorized,
	http.StatusForbidden:          ErrForbidden,
	http.StatusNotFound:           ErrNotFound,
	http.StatusPaymentRequired:    ErrBudgetExhausted,
	http.StatusConflict:           ErrConflict,
	http.StatusTooManyRequests:    ErrTooManyPending,
	http.StatusServiceUnavailable: ErrUnavailable,
}

// Is maps the HTTP status to the package's sentinel errors.
func (e *Error) Is(target error) bool {
	s, ok := statusSentinel[e.StatusCode]
	return ok && s == target
}

// StatusCode returns the HTTP status of an *Error in err's chain, or 0.
func StatusCode(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.StatusCode
	}
	return 0
}
