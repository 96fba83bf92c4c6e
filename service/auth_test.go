package service_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bursar-hpc/bursar/client"
	"github.com/bursar-hpc/bursar/service"
)

// matrixEnv is a service with campaigns a and b; a holds a lease and has a
// pending request.
type matrixEnv struct {
	*env
	tokA, tokB string
	lease      int
	pending    int
}

func newMatrixEnv(t *testing.T) *matrixEnv {
	ctx := context.Background()
	e := newEnv(t, service.Options{})
	m := &matrixEnv{env: e}
	ra, err := e.admin.Register(ctx, spec("a"))
	require.NoError(t, err)
	rb, err := e.admin.Register(ctx, spec("b"))
	require.NoError(t, err)
	m.tokA, m.tokB = ra.Token, rb.Token
	a := e.admin.WithToken(m.tokA)
	acc, err := a.Request(ctx, "a", client.LeaseRequest{GPUs: 4, Duration: 100})
	require.NoError(t, err)
	require.NoError(t, e.svc.Tick())
	m.lease = acc.RequestID
	acc, err = a.Request(ctx, "a", client.LeaseRequest{GPUs: 4, Duration: 100})
	require.NoError(t, err)
	m.pending = acc.RequestID
	return m
}

type matrixOp struct {
	name, method, path, body string
	role                     string // public, admin, campaign
}

func matrixOps(m *matrixEnv) []matrixOp {
	return []matrixOp{
		{"health", "GET", "/healthz", "", "public"},
		{"openapi", "GET", "/openapi.json", "", "public"},
		{"register", "POST", "/v1/campaigns", `{"name":"new","budget":1,"guaranteed":0,"sustained":1,"burst_ceiling":1,"bucket":1,"class":"opportunistic"}`, "admin"},
		{"list", "GET", "/v1/campaigns", "", "admin"},
		{"campaign", "GET", "/v1/campaigns/a", "", "campaign"},
		{"supply", "GET", "/v1/campaigns/a/supply", "", "campaign"},
		{"request", "POST", "/v1/campaigns/a/requests", `{"gpus":1,"duration":10}`, "campaign"},
		{"request-status", "GET", "/v1/campaigns/a/requests/" + strconv.Itoa(m.pending), "", "campaign"},
		{"leases", "GET", "/v1/campaigns/a/leases", "", "campaign"},
		{"release-all", "DELETE", "/v1/campaigns/a/leases?class=agent-burst", "", "campaign"},
		{"release-lease", "DELETE", "/v1/campaigns/a/leases/" + strconv.Itoa(m.lease), "", "campaign"},
		{"consume", "POST", "/v1/campaigns/a/consume", `{"io":1,"inference":1}`, "campaign"},
		{"grants", "GET", "/v1/campaigns/a/grants", "", "campaign"},
		{"journal", "GET", "/v1/journal", "", "any"},
		{"journal-of-a", "GET", "/v1/journal?campaign=a", "", "campaign"},
	}
}

// TestAuthMatrix runs every operation with every kind of credential on a
// fresh service: no token, a wrong one, a malformed header, a forged
// campaign token, the other campaign's token, the campaign's own token and
// the administrator's.
func TestAuthMatrix(t *testing.T) {
	type who struct {
		name   string
		header func(m *matrixEnv) string
	}
	whos := []who{
		{"none", func(*matrixEnv) string { return "" }},
		{"wrong", func(*matrixEnv) string { return "Bearer not-a-token-at-all" }},
		{"basic", func(m *matrixEnv) string { return "Basic " + m.tokA }},
		{"forged", func(*matrixEnv) string { return "Bearer bursar_c0_0123456789abcdef0123456789abcdef" }},
		{"unknown-id", func(m *matrixEnv) string { return "Bearer bursar_c7" + m.tokA[len("bursar_c0"):] }},
		{"other", func(m *matrixEnv) string { return "Bearer " + m.tokB }},
		{"own", func(m *matrixEnv) string { return "Bearer " + m.tokA }},
		{"admin", func(*matrixEnv) string { return "Bearer " + adminToken }},
	}
	want := func(role, who string) int {
		switch {
		case role == "public":
			return 200
		case who == "none" || who == "wrong" || who == "basic" || who == "forged" || who == "unknown-id":
			return 401
		case who == "admin":
			return 200
		case role == "admin":
			return 403
		case role == "any":
			return 200
		case who == "own":
			return 200
		}
		return 403
	}
	for _, opName := range []string{"health", "openapi", "register", "list", "campaign", "supply", "request", "request-status",
		"leases", "release-all", "release-lease", "consume", "grants", "journal", "journal-of-a"} {
		for _, w := range whos {
			t.Run(opName+"/"+w.name, func(t *testing.T) {
				m := newMatrixEnv(t)
				var op matrixOp
				for _, o := range matrixOps(m) {
					if o.name == opName {
						op = o
					}
				}
				req, err := http.NewRequest(op.method, m.url+op.path, strings.NewReader(op.body))
				require.NoError(t, err)
				if h := w.header(m); h != "" {
					req.Header.Set("Authorization", h)
				}
				resp, err := http.DefaultClient.Do(req)
				require.NoError(t, err)
				defer resp.Body.Close()
				code := resp.StatusCode
				if code >= 200 && code < 300 {
					code = 200
				}
				require.Equal(t, want(op.role, w.name), code, "%s %s as %s", op.method, op.path, w.name)
				if resp.StatusCode >= 400 {
					assert.Equal(t, "application/problem+json", resp.Header.Get("Content-Type"))
					var p client.Problem
					require.NoError(t, json.NewDecoder(resp.Body).Decode(&p))
					assert.Equal(t, resp.StatusCode, p.Status)
				}
				if resp.StatusCode == 401 {
					assert.Equal(t, `Bearer realm="bursar"`, resp.Header.Get("WWW-Authenticate"))
				}
				logs := m.logs.String()
				assert.NotContains(t, logs, m.tokA[len(m.tokA)-32:], "a campaign token reached the log")
				assert.NotContains(t, logs, m.tokB[len(m.tokB)-32:], "a campaign token reached the log")
				assert.NotContains(t, logs, adminToken, "the administrator token reached the log")
			})
		}
	}
}

// TestAuthBeforeValidation: an unauthenticated caller gets 401 however bad
// its input, and learns nothing from validation.
func TestAuthBeforeValidation(t *testing.T) {
	m := newMatrixEnv(t)
	code, _ := raw(t, m.url, "POST", "/v1/campaigns/a/requests", "", `{"gpus":"many"}`)
	assert.Equal(t, 401, code)
	code, _ = raw(t, m.url, "POST", "/v1/campaigns/a/requests", m.tokB, `{"gpus":"many"}`)
	assert.Equal(t, 403, code)
	code, _ = raw(t, m.url, "POST", "/v1/campaigns/a/requests", m.tokA, `{"gpus":"many"}`)
	assert.Equal(t, 422, code)
	code, _ = raw(t, m.url, "GET", "/v1/campaigns/nobody/supply", m.tokA, "")
	assert.Equal(t, 403, code, "a campaign token cannot probe which names exist")
	code, _ = raw(t, m.url, "GET", "/v1/campaigns/nobody/supply", adminToken, "")
	assert.Equal(t, 404, code)
}

// TestJournalScope: a campaign reads only its own records, whatever it asks.
func TestJournalScope(t *testing.T) {
	ctx := context.Background()
	m := newMatrixEnv(t)
	a := m.admin.WithToken(m.tokA)
	j, err := a.Journal(ctx, "", client.Page{After: 0, Limit: 1000})
	require.NoError(t, err)
	require.NotEmpty(t, j.Records)
	for _, r := range j.Records {
		var rec map[string]any
		require.NoError(t, json.Unmarshal(r.Record, &rec))
		assert.Equal(t, "a", rec["campaign"])
	}
	_, err = a.Journal(ctx, "b", client.Tail)
	assert.ErrorIs(t, err, client.ErrForbidden)
	all, err := m.admin.Journal(ctx, "", client.Page{After: 0, Limit: 1000})
	require.NoError(t, err)
	assert.Greater(t, len(all.Records), len(j.Records))
}

func TestTokensAreStoredHashed(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	e := newEnv(t, service.Options{DataDir: dir})
	reg, err := e.admin.Register(ctx, spec("a"))
	require.NoError(t, err)
	wal := readWAL(t, dir)
	assert.NotContains(t, wal, reg.Token[len(reg.Token)-32:])
	assert.NotContains(t, wal, adminToken)
	assert.Contains(t, wal, `"token_hash":"`)
}
