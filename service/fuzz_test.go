package service_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bursar-hpc/bursar/client"
	"github.com/bursar-hpc/bursar/service"
)

// The fuzz targets feed arbitrary input to every request decoder through
// the real handler and check the contract: no panic, no 5xx, and every
// refusal is a problem document whose status is the HTTP status. They run
// their seeds with go test; `go test -fuzz FuzzX ./service/` explores.

type fuzzEnv struct {
	svc   *service.Service
	h     http.Handler
	tokA  string
	lease int
}

func newFuzzEnv(f testing.TB) *fuzzEnv {
	f.Helper()
	e := newEnv(f, service.Options{})
	ctx := context.Background()
	reg, err := e.admin.Register(ctx, spec("a"))
	require.NoError(f, err)
	a := e.admin.WithToken(reg.Token)
	acc, err := a.Request(ctx, "a", client.LeaseRequest{GPUs: 2, Duration: 1000})
	require.NoError(f, err)
	require.NoError(f, e.svc.Tick())
	return &fuzzEnv{svc: e.svc, h: e.svc.Handler(), tokA: reg.Token, lease: acc.RequestID}
}

// serve runs one request through the handler in process.
func (fe *fuzzEnv) serve(t *testing.T, req *http.Request, token string) *httptest.ResponseRecorder {
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	rec := httptest.NewRecorder()
	fe.h.ServeHTTP(rec, req)
	checkAnswer(t, rec)
	return rec
}

func checkAnswer(t *testing.T, rec *httptest.ResponseRecorder) {
	t.Helper()
	if rec.Code >= 500 {
		t.Fatalf("status %d: %s", rec.Code, rec.Body.String())
	}
	if rec.Code >= 400 {
		var p client.Problem
		if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil {
			t.Fatalf("status %d with a body that is not a problem document: %q", rec.Code, rec.Body.String())
		}
		if p.Status != rec.Code {
			t.Fatalf("problem status %d on an answer of %d", p.Status, rec.Code)
		}
	}
}

func fuzzBody(f *testing.F, path string, asAdmin bool, seeds ...string) {
	fe := newFuzzEnv(f)
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Add([]byte(``))
	f.Add([]byte(`null`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`[1,2]`))
	f.Add([]byte(`{"a":` + strings.Repeat("[", 10000)))
	f.Add([]byte("\xff\xfe{}"))
	f.Fuzz(func(t *testing.T, body []byte) {
		tok := fe.tokA
		if asAdmin {
			tok = adminToken
		}
		req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(string(body)))
		req.Header.Set("Content-Type", "application/json")
		fe.serve(t, req, tok)
	})
}

func FuzzRegisterBody(f *testing.F) {
	fuzzBody(f, "/v1/campaigns", true,
		`{"name":"x","budget":1,"guaranteed":0,"sustained":1,"burst_ceiling":1,"bucket":1,"class":"opportunistic"}`,
		`{"name":"y","budget":1,"guaranteed":600,"sustained":1,"burst_ceiling":600,"bucket":1,"class":"deadline"}`,
		`{"name":"z","budget":1e15,"guaranteed":0,"sustained":1e9,"burst_ceiling":0,"bucket":0,"class":"interactive","io":{"rate":0,"bucket":0,"ceiling":0}}`,
		`{"name":"a","budget":1,"guaranteed":0,"sustained":1,"burst_ceiling":1,"bucket":1,"class":"opportunistic"}`)
}

func FuzzRequestBody(f *testing.F) {
	fuzzBody(f, "/v1/campaigns/a/requests", false,
		`{"gpus":1,"duration":1}`, `{"gpus":512,"duration":31536000,"class":"deadline"}`,
		`{"gpus":-1,"duration":1}`, `{"gpus":1,"duration":1,"class":""}`, `{"gpus":1e400,"duration":1}`)
}

func FuzzConsumeBody(f *testing.F) {
	fuzzBody(f, "/v1/campaigns/a/consume", false,
		`{"io":1,"inference":1}`, `{"io":0,"inference":0}`, `{"io":1e12,"inference":1e12}`, `{"io":-0,"inference":5e-324}`)
}

// FuzzPathAndQuery fuzzes the path and query parameter decoders of every
// operation.
func FuzzPathAndQuery(f *testing.F) {
	fe := newFuzzEnv(f)
	for _, s := range [][2]string{
		{"a/grants", "after=0&limit=5"}, {"a/grants", "after=-1&limit=1000"}, {"a/grants", "limit=%00"},
		{"a/requests/1", ""}, {"a/requests/99999999999999999999", ""}, {"a/leases", "class=agent-burst"},
		{"a/leases/1", ""}, {"a/leases/-1", ""}, {"a/supply", "x=1"}, {"a%2Fb/supply", ""}, {"../../etc", ""},
		{"a", "campaign=a&after=1"},
	} {
		f.Add(s[0], s[1], uint8(0))
	}
	f.Fuzz(func(t *testing.T, rest, query string, method uint8) {
		u := &url.URL{Path: "/v1/campaigns/" + rest, RawQuery: query}
		if method%4 == 3 {
			u.Path = "/v1/journal"
		}
		req, err := http.NewRequest([]string{"GET", "DELETE", "POST", "GET"}[method%4], "http://x"+u.EscapedPath()+"?"+query, nil)
		if err != nil {
			t.Skip()
		}
		fe.serve(t, req, adminToken)
	})
}

// FuzzAuthorization: no header value gets past authentication but the
// real tokens, and none makes the server fail.
func FuzzAuthorization(f *testing.F) {
	fe := newFuzzEnv(f)
	for _, s := range []string{"", "Bearer", "Bearer ", "bearer " + adminToken, "Bearer " + fe.tokA, "Bearer bursar_c0_",
		"Bearer bursar_c999999999_0123456789abcdef0123456789abcdef", "Bearer bursar_c-1_0123456789abcdef0123456789abcdef",
		"Basic Zm9vOmJhcg==", "Bearer " + strings.Repeat("x", 600)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, header string) {
		req := httptest.NewRequest(http.MethodGet, "/v1/campaigns/a/supply", nil)
		req.Header["Authorization"] = []string{header}
		rec := httptest.NewRecorder()
		fe.h.ServeHTTP(rec, req)
		checkAnswer(t, rec)
		tok := strings.TrimSpace(header)
		valid := false
		for _, real := range []string{adminToken, fe.tokA} {
			if scheme, rest, ok := strings.Cut(tok, " "); ok && strings.EqualFold(scheme, "bearer") && strings.TrimSpace(rest) == real {
				valid = true
			}
		}
		if valid != (rec.Code == 200) {
			t.Fatalf("header %q: status %d", header, rec.Code)
		}
	})
}
