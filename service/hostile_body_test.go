package service_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/bursar-hpc/bursar/service"
)

// Issue 22, items 1, 3 and 4: bodies built to crash or mislead the
// service. Each is sent over a real loopback connection where it matters
// that the server lives on, and through the handler in process where the
// allocation is measured.

// TestDeepNestingRefused: a body nested 40,000 deep (80 KB) is refused
// with 422 in a few hundred bytes, and the service answers afterwards.
func TestDeepNestingRefused(t *testing.T) {
	m := newMatrixEnv(t)
	for _, body := range []string{
		`{"x":` + strings.Repeat("[", 40000) + strings.Repeat("]", 40000) + `}`,
		`{"gpus":` + strings.Repeat("[", 40000) + strings.Repeat("]", 40000) + `,"duration":1}`,
		strings.Repeat("[", 40000) + strings.Repeat("]", 40000),
		strings.Repeat(`{"a":`, 20000) + `1` + strings.Repeat("}", 20000),
	} {
		code, ans := raw(t, m.url, "POST", "/v1/campaigns/a/requests", m.tokA, body)
		assert.Contains(t, []int{413, 422}, code, "%.300s", ans)
		problemOf(t, code, ans)
		assert.Less(t, len(ans), 1000, "%.300s", ans)
	}
	code, _ := raw(t, m.url, "GET", "/v1/campaigns/a/supply", m.tokA, "")
	assert.Equal(t, 200, code, "the service lives on")
}

// TestCaseVariantsRefused: a key that differs from a field's name in case
// only is an unknown key, refused, never read as the field (encoding/json
// would have let {"GPUS":500} win over {"gpus":1}).
func TestCaseVariantsRefused(t *testing.T) {
	m := newMatrixEnv(t)
	cases := []struct{ path, body, loc string }{
		{"/v1/campaigns/a/requests", `{"gpus":1,"duration":10,"GPUS":500}`, "body.GPUS"},
		{"/v1/campaigns/a/requests", `{"gpus":1,"Duration":9000000000000000000}`, "body.Duration"},
		{"/v1/campaigns/a/requests", `{"Gpus":1,"duration":10}`, "body.Gpus"},
		{"/v1/campaigns", `{"name":"ok","NAME":"evil/../x",` + goodSpec + `}`, "body.NAME"},
		{"/v1/campaigns", `{"NAME":"evil/../x",` + goodSpec + `}`, "body.NAME"},
		{"/v1/campaigns", `{"name":"n",` + goodSpec + `,"io":{"rate":1,"bucket":1,"ceiling":1,"Rate":1e12}}`, "body.io.Rate"},
		{"/v1/campaigns/a/consume", `{"io":0,"inference":0,"IO":1e12}`, "body.IO"},
	}
	for _, c := range cases {
		code, ans := raw(t, m.url, "POST", c.path, adminToken, c.body)
		require.Equal(t, 422, code, "%s: %s", c.body, ans)
		assert.Contains(t, locations(problemOf(t, 422, ans)), c.loc, "%s", ans)
	}
	list, err := m.admin.Campaigns(t.Context())
	require.NoError(t, err)
	assert.Len(t, list.Campaigns, 2, "nothing was registered")
}

// TestManyUnknownKeys: 5,000 unknown keys (49 KB) are one refusal of a few
// hundred bytes, not one error per key each echoing the whole object.
func TestManyUnknownKeys(t *testing.T) {
	m := newMatrixEnv(t)
	var b strings.Builder
	b.WriteString(`{"io":1,"inference":1`)
	for i := range 5000 {
		fmt.Fprintf(&b, `,"k%04d":1`, i)
	}
	b.WriteString("}")
	code, ans := raw(t, m.url, "POST", "/v1/campaigns/a/consume", m.tokA, b.String())
	assert.Equal(t, 422, code)
	assert.Less(t, len(ans), 64<<10)
	assert.Less(t, len(ans), 1000, "%s", ans)
	assert.Equal(t, []string{"body.k0000"}, locations(problemOf(t, 422, ans)))
}

// TestBodyReadErrors: a body cut short, or with bad chunked encoding, is
// the client's fault: 400, never 500.
func TestBodyReadErrors(t *testing.T) {
	m := newMatrixEnv(t)
	addr := strings.TrimPrefix(m.url, "http://")
	for _, req := range []string{
		"POST /v1/campaigns/a/consume HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + m.tokA +
			"\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n",
		"POST /v1/campaigns/a/consume HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + m.tokA +
			"\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{\"io\"\r\n",
	} {
		head := rawExchange(t, addr, req, true)
		assert.Regexp(t, `^HTTP/1.1 4\d\d`, head, "%q", req)
	}
	// Short body: Content-Length promises more than arrives before the
	// client half-closes.
	head := rawExchange(t, addr, "POST /v1/campaigns/a/consume HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "+m.tokA+
		"\r\nContent-Length: 100\r\n\r\n{\"io\":1", true)
	assert.Regexp(t, `^HTTP/1.1 4\d\d`, head)
}

// hostileBodies are bodies of up to 1 MB built to be expensive.
func hostileBodies() map[string]string {
	keys := func(n int) string {
		var b strings.Builder
		b.WriteString(`{"gpus":1,"duration":1`)
		for i := range n {
			fmt.Fprintf(&b, `,"k%d":1`, i)
		}
		return b.String() + "}"
	}
	flat := func(n int) string { return "[" + strings.Repeat("0,", n) + "0]" }
	return map[string]string{
		"depth-40k":       `{"x":` + strings.Repeat("[", 40000) + strings.Repeat("]", 40000) + `}`,
		"depth-500k":      strings.Repeat("[", 500000) + strings.Repeat("]", 500000),
		"keys-5k":         keys(5000),
		"keys-90k":        keys(90000),
		"array-500k":      flat(500000),
		"string-1MB":      `{"gpus":1,"duration":1,"class":"` + strings.Repeat("x", 1<<20-60) + `"}`,
		"escapes-1MB":     `{"class":"` + strings.Repeat(`\u00e9`, (1<<20-20)/6) + `"}`,
		"dup-in-deep-obj": `{"io":` + strings.Repeat(`{"a":`, 30) + `1` + strings.Repeat("}", 30) + `}`,
	}
}

// answerCost serves one body in process and reports the answer and the
// bytes allocated meanwhile (the service is idle otherwise).
func answerCost(t testing.TB, h http.Handler, path, token, body string) (*httptest.ResponseRecorder, uint64) {
	var before, after runtime.MemStats
	req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	rec := httptest.NewRecorder()
	runtime.ReadMemStats(&before)
	h.ServeHTTP(rec, req)
	runtime.ReadMemStats(&after)
	return rec, after.TotalAlloc - before.TotalAlloc
}

// TestHostileBodiesBounded: every hostile body is refused with a 4xx of
// under 1 KB, allocating under 64 MB (the bound; the body itself
// is up to 1 MB and is read once).
func TestHostileBodiesBounded(t *testing.T) {
	fe := newFuzzEnv(t)
	for name, body := range hostileBodies() {
		require.LessOrEqual(t, len(body), service.MaxBodyBytes, name)
		rec, alloc := answerCost(t, fe.h, "/v1/campaigns/a/requests", fe.tokA, body)
		checkAnswer(t, rec)
		assert.GreaterOrEqual(t, rec.Code, 400, "%s: %s", name, rec.Body)
		assert.Less(t, rec.Body.Len(), 1000, "%s: %.300s", name, rec.Body)
		assert.Less(t, alloc, uint64(64<<20), "%s allocated %d bytes", name, alloc)
		t.Logf("%-16s %d, %4d bytes answered, %8d bytes allocated", name, rec.Code, rec.Body.Len(), alloc)
	}
}

// BenchmarkHostileBody: the time and allocation of answering each hostile
// body (go test -bench HostileBody -benchmem ./service/).
func BenchmarkHostileBody(b *testing.B) {
	fe := newFuzzEnv(b)
	for name, body := range hostileBodies() {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				req := httptest.NewRequest(http.MethodPost, "/v1/campaigns/a/requests", strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+fe.tokA)
				fe.h.ServeHTTP(httptest.NewRecorder(), req)
			}
		})
	}
}

// requestBody renders a lease request with the given keys in order.
func requestBody(members [][2]string) string {
	parts := make([]string, len(members))
	for i, m := range members {
		parts[i] = fmt.Sprintf("%q:%s", m[0], m[1])
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// TestCaseAndDuplicateProperty: a valid request with one key's case
// changed, or one key repeated with any value, is refused with 422 and
// files nothing.
func TestCaseAndDuplicateProperty(t *testing.T) {
	fe := newFuzzEnv(t)
	rapid.Check(t, func(rt *rapid.T) {
		members := [][2]string{
			{"gpus", fmt.Sprint(rapid.IntRange(1, 512).Draw(rt, "gpus"))},
			{"duration", fmt.Sprint(rapid.IntRange(1, 31536000).Draw(rt, "duration"))},
		}
		if rapid.Bool().Draw(rt, "class") {
			members = append(members, [2]string{"class", `"` + rapid.SampledFrom([]string{"deadline", "interactive", "agent-burst", "opportunistic"}).Draw(rt, "cls") + `"`})
		}
		i := rapid.IntRange(0, len(members)-1).Draw(rt, "key")
		if rapid.Bool().Draw(rt, "duplicate") {
			dup := [2]string{members[i][0], fmt.Sprint(rapid.IntRange(-1, 1<<21).Draw(rt, "value"))}
			at := rapid.IntRange(0, len(members)).Draw(rt, "at")
			members = append(members[:at], append([][2]string{dup}, members[at:]...)...)
		} else {
			key := []rune(members[i][0])
			mask := rapid.IntRange(1, 1<<len(key)-1).Draw(rt, "mask")
			for j := range key {
				if mask&(1<<j) != 0 {
					key[j] = []rune(strings.ToUpper(string(key[j])))[0]
				}
			}
			if string(key) == members[i][0] {
				rt.Skip("no letter changed")
			}
			members[i][0] = string(key)
		}
		body := requestBody(members)
		req := httptest.NewRequest(http.MethodPost, "/v1/campaigns/a/requests", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+fe.tokA)
		rec := httptest.NewRecorder()
		fe.h.ServeHTTP(rec, req)
		if rec.Code != 422 {
			rt.Fatalf("%s: %d %s", body, rec.Code, rec.Body)
		}
	})
}

// TestAnyBodyBounded: any body of up to 1 MB, built from JSON fragments
// that stress the parser, is answered with no 5xx and under 64 MB of
// allocation.
func TestAnyBodyBounded(t *testing.T) {
	fe := newFuzzEnv(t)
	frags := []string{"[", "]", "{", "}", `"k":`, `"gpus":`, `"GPUS":`, "1", "1e400", ",", `"\u00e9"`, "null", " ", `"duration":5`}
	rapid.Check(t, func(rt *rapid.T) {
		var b strings.Builder
		n := rapid.IntRange(0, 64).Draw(rt, "pieces")
		for range n {
			f := rapid.SampledFrom(frags).Draw(rt, "frag")
			rep := rapid.IntRange(1, 20000).Draw(rt, "repeat")
			if b.Len()+len(f)*rep > service.MaxBodyBytes {
				break
			}
			b.WriteString(strings.Repeat(f, rep))
		}
		rec, alloc := answerCost(t, fe.h, "/v1/campaigns/a/requests", fe.tokA, b.String())
		if rec.Code >= 500 {
			rt.Fatalf("%d: %s", rec.Code, rec.Body)
		}
		if alloc > 64<<20 {
			rt.Fatalf("%d bytes allocated for a body of %d", alloc, b.Len())
		}
		var p map[string]any
		if rec.Code >= 400 && json.Unmarshal(rec.Body.Bytes(), &p) != nil {
			rt.Fatalf("not a problem: %s", rec.Body)
		}
	})
}
