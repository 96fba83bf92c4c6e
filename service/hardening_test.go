package service_test

import (
	"encoding/json"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bursar-hpc/bursar/client"
)

// problemOf decodes an RFC 9457 body and checks that it is one.
func problemOf(t *testing.T, status int, body []byte) client.Problem {
	t.Helper()
	var p client.Problem
	require.NoError(t, json.Unmarshal(body, &p), "%s", body)
	require.Equal(t, status, p.Status, "%s", body)
	return p
}

func locations(p client.Problem) []string {
	var out []string
	for _, d := range p.Errors {
		out = append(out, d.Location)
	}
	return out
}

// TestMethodNotAllowed: a wrong method on a route that exists is 405 with
// Allow naming the methods it has, and a problem body.
func TestMethodNotAllowed(t *testing.T) {
	m := newMatrixEnv(t)
	cases := []struct{ method, path, allow string }{
		{"PUT", "/v1/campaigns", "GET, HEAD, POST"},
		{"PATCH", "/v1/campaigns/a/leases", "GET, HEAD, DELETE"},
		{"POST", "/healthz", "GET, HEAD"},
		{"DELETE", "/v1/campaigns/a/requests", "POST"},
	}
	for _, c := range cases {
		req, err := newRawRequest(m.url, c.method, c.path, adminToken)
		require.NoError(t, err)
		resp, body := do(t, req)
		require.Equal(t, 405, resp.StatusCode, "%s %s: %s", c.method, c.path, body)
		assert.Equal(t, c.allow, resp.Header.Get("Allow"), "%s %s", c.method, c.path)
		assert.Equal(t, "application/problem+json", resp.Header.Get("Content-Type"))
		problemOf(t, 405, body)
	}
	// A path that exists under no method stays 404.
	code, body := raw(t, m.url, "PUT", "/v1/nothing", adminToken, "")
	assert.Equal(t, 404, code)
	problemOf(t, 404, body)
}

// TestNonCanonicalPaths: // and .. are not redirected with an HTML body
// (which a client would follow to another resource); they are a 404
// problem.
func TestNonCanonicalPaths(t *testing.T) {
	m := newMatrixEnv(t)
	for _, p := range []string{"//v1/campaigns", "/v1//campaigns", "/v1/campaigns/a/../b/supply", "/v1/./campaigns", "/v1/campaigns/"} {
		conn, err := net.Dial("tcp", strings.TrimPrefix(m.url, "http://"))
		require.NoError(t, err)
		_, err = conn.Write([]byte("GET " + p + " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + adminToken + "\r\nConnection: close\r\n\r\n"))
		require.NoError(t, err)
		require.NoError(t, conn.SetReadDeadline(time.Now().Add(5*time.Second)))
		var b strings.Builder
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			b.WriteString(string(buf[:n]))
			if err != nil {
				break
			}
		}
		conn.Close()
		head, body, _ := strings.Cut(b.String(), "\r\n\r\n")
		assert.True(t, strings.HasPrefix(head, "HTTP/1.1 404"), "%s: %s", p, head)
		assert.Contains(t, head, "application/problem+json", p)
		assert.NotContains(t, strings.ToLower(body), "<a href", p)
	}
}

// TestStrictJSON: duplicate keys are refused (not last-wins) and an
// overflowing number is named by its field, at any depth.
func TestStrictJSON(t *testing.T) {
	m := newMatrixEnv(t)
	cases := []struct {
		path, body string
		status     int
		loc        string
	}{
		{"/v1/campaigns/a/requests", `{"gpus":1,"duration":10,"gpus":500}`, 422, "body.gpus"},
		{"/v1/campaigns/a/requests", `{"gpus":1e400,"duration":10}`, 400, "body.gpus"},
		{"/v1/campaigns/a/requests", `{"gpus":1,"duration":-1e400}`, 400, "body.duration"},
		{"/v1/campaigns", `{"name":"n",` + goodSpec + `,"io":{"rate":1,"bucket":1,"ceiling":1,"rate":2}}`, 422, "body.io.rate"},
		{"/v1/campaigns", `{"name":"n",` + goodSpec + `,"io":{"rate":1e309,"bucket":1,"ceiling":1}}`, 400, "body.io.rate"},
		{"/v1/campaigns/a/consume", `{"io":0,"inference":0,"io":5}`, 422, "body.io"},
	}
	for _, c := range cases {
		code, body := raw(t, m.url, "POST", c.path, adminToken, c.body)
		p := problemOf(t, c.status, body)
		assert.Equal(t, c.status, code)
		assert.Contains(t, locations(p), c.loc, "%s: %s", c.body, body)
	}
	// Strictness comes after authentication: no token, no validation.
	code, _ := raw(t, m.url, "POST", "/v1/campaigns/a/requests", "", `{"gpus":1,"gpus":2,"duration":10}`)
	assert.Equal(t, 401, code)
	// Equal keys in different objects are fine.
	code, body := raw(t, m.url, "POST", "/v1/campaigns", adminToken,
		`{"name":"strict-ok",`+goodSpec+`,"io":{"rate":1,"bucket":1,"ceiling":1},"inference":{"rate":1,"bucket":1,"ceiling":1}}`)
	assert.Equal(t, 201, code, "%s", body)
}

// TestGiantKeyNotEchoed: a 500 KB unknown property name does not come back
// whole.
func TestGiantKeyNotEchoed(t *testing.T) {
	m := newMatrixEnv(t)
	key := strings.Repeat("k", 500<<10)
	for _, body := range []string{
		`{"io":1,"inference":1,"` + key + `":1}`,
		`{"io":1,"inference":1,"` + key + `":1,"` + key + `":2}`,
	} {
		code, ans := raw(t, m.url, "POST", "/v1/campaigns/a/consume", adminToken, body)
		assert.Equal(t, 422, code)
		assert.Less(t, len(ans), 2000, "%.300s", ans)
		problemOf(t, 422, ans)
	}
}

// TestHealthShowsDurableTick: /healthz reports the tick that is on disk.
func TestHealthShowsDurableTick(t *testing.T) {
	e := newEnv(t, serviceOptionsWithDir(t))
	for range 3 {
		require.NoError(t, e.svc.Tick())
	}
	code, body := raw(t, e.url, "GET", "/healthz", "", "")
	require.Equal(t, 200, code)
	var h client.Health
	require.NoError(t, json.Unmarshal(body, &h))
	assert.Equal(t, 3, h.T)
	assert.True(t, h.Durable)
}

// TestJournalAfterMaxInt64: a cursor at the top of the int64 range reads
// nothing; it used to overflow and return the oldest records.
func TestJournalAfterMaxInt64(t *testing.T) {
	m := newMatrixEnv(t)
	for _, path := range []string{"/v1/journal?after=9223372036854775807", "/v1/journal?after=9223372036854775806",
		"/v1/campaigns/a/grants?after=9223372036854775807"} {
		code, body := raw(t, m.url, "GET", path, adminToken, "")
		require.Equal(t, 200, code, "%s", body)
		var page struct {
			Records []json.RawMessage `json:"records"`
			Grants  []json.RawMessage `json:"grants"`
		}
		require.NoError(t, json.Unmarshal(body, &page))
		assert.Empty(t, page.Records, path)
		assert.Empty(t, page.Grants, path)
	}
}
