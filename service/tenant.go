package service

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"golang.org/x/time/rate"

	"github.com/bursar-hpc/bursar/policy"
)

// Per-tenant limits (issue 22, item 3). Every write of a campaign token
// (request, release, consume: each may append a journal record) draws from
// that campaign's token bucket of Options.WriteRate writes per wall-clock
// second, Options.WriteBurst deep; an empty bucket is 429 with
// Retry-After, before the body is read. The administrator is not limited.
// And consume, the one write an agent makes in a loop, is journaled at most
// Options.MaxConsumePerTick times per campaign per broker second: a further
// call in the same second is 429 and changes nothing, so an agent spamming
// {"io":1e-300} adds at most that many records per tick to the journal,
// which snapshots keep forever. An agent that meters once per second, as
// the API intends, never meets either limit.

// Defaults of the per-tenant limits.
const (
	DefaultWriteRate         = 100
	DefaultMaxConsumePerTick = 8
)

// writeLimits holds one rate limiter per campaign id.
type writeLimits struct {
	r     rate.Limit
	burst int
	mu    sync.Mutex
	byID  []*rate.Limiter
}

func newWriteLimits(perSecond float64, burst int) *writeLimits {
	if perSecond < 0 {
		return nil
	}
	return &writeLimits{r: rate.Limit(perSecond), burst: burst}
}

// allow takes one write from campaign id's bucket; when it is empty it
// reports how long until the next write would be allowed.
func (w *writeLimits) allow(id policy.CampaignID, now time.Time) (bool, time.Duration) {
	if w == nil || id < 0 {
		return true, 0
	}
	w.mu.Lock()
	for int(id) >= len(w.byID) {
		w.byID = append(w.byID, nil)
	}
	l := w.byID[id]
	if l == nil {
		l = rate.NewLimiter(w.r, w.burst)
		w.byID[id] = l
	}
	w.mu.Unlock()
	r := l.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return false, d
	}
	return true, 0
}

// limitWrite answers 429 when a campaign's write comes too fast; ok is
// false when it has answered.
func (s *Service) limitWrite(ctx huma.Context, p principal) bool {
	if p.admin || ctx.Method() == http.MethodGet || ctx.Method() == http.MethodHead {
		return true
	}
	ok, wait := s.writes.allow(p.id, time.Now())
	if ok {
		return true
	}
	ctx.SetHeader("Retry-After", strconv.Itoa(int(math.Ceil(wait.Seconds()))))
	_ = huma.WriteErr(s.api, ctx, http.StatusTooManyRequests, fmt.Sprintf(
		"campaign %s writes faster than %g per second (burst %d); retry after %v", p.name, float64(s.writes.r), s.writes.burst,
		wait.Round(time.Millisecond)))
	return false
}
