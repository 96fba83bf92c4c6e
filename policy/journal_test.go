package policy

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// Each record kind in the prototype's layout: t and event first, ", " and
// ": " separators, the kind's fields in order, numbers rounded for reading.
// The expected rounding is Python's round(x, n) (correctly rounded from the
// binary value), worked out with python3.
func TestJournalLayout(t *testing.T) {
	for _, tc := range []struct {
		e    Event
		want string
	}{
		{Event{T: 0, Kind: EventRegister, Campaign: "victim", Guaranteed: 32, Sustained: 32, Bucket: 60000, Burst: 64},
			`{"t": 0, "event": "register", "campaign": "victim", "guaranteed": 32, "R": 32, "B": 60000, "burst": 64}`},
		{Event{T: 0, Kind: EventRegister, Campaign: "p", Sustained: 0.5, Bucket: 1e16, Burst: 1},
			`{"t": 0, "event": "register", "campaign": "p", "guaranteed": 0, "R": 0.5, "B": 1e+16, "burst": 1}`},
		{Event{T: 7, Kind: EventDeny, Campaign: "c", GPUs: 8, Class: AgentBurst, Reason: ReasonBudgetExhausted},
			`{"t": 7, "event": "deny", "campaign": "c", "gpus": 8, "cls": "agent-burst", "reason": "budget-exhausted"}`},
		{Event{T: 9, Kind: EventRelease, Lease: 12, Campaign: "c", GPUs: 3, Class: Opportunistic, Reason: ReasonPreempted},
			`{"t": 9, "event": "release", "lease": 12, "campaign": "c", "gpus": 3, "reason": "preempted"}`},
		{Event{T: 901, Kind: EventRequestExpired, Campaign: "w", GPUs: 10, Class: Deadline},
			`{"t": 901, "event": "request-expired", "campaign": "w", "gpus": 10, "cls": "deadline"}`},
		// GPU tokens to 1 decimal: 12.345 → 12.3, 0.05 → 0.1 (0.05 is a
		// hair above), 0.25 → 0.2 (an exact tie goes to even), 59999.96 →
		// 60000 (integral values print without a fraction).
		{Event{T: 1, Kind: EventThrottle, Campaign: "s", GPUs: 96, Class: Opportunistic, Tokens: 12.345, Cap: 384},
			`{"t": 1, "event": "throttle", "campaign": "s", "gpus": 96, "cls": "opportunistic", "tokens": 12.3, "cap": 384}`},
		{Event{T: 1, Kind: EventThrottle, Campaign: "s", GPUs: 1, Class: Interactive, Tokens: 0.05, Cap: 0},
			`{"t": 1, "event": "throttle", "campaign": "s", "gpus": 1, "cls": "interactive", "tokens": 0.1, "cap": 0}`},
		{Event{T: 1, Kind: EventThrottle, Campaign: "s", GPUs: 1, Class: Interactive, Tokens: 0.25, Cap: 2},
			`{"t": 1, "event": "throttle", "campaign": "s", "gpus": 1, "cls": "interactive", "tokens": 0.2, "cap": 2}`},
		{Event{T: 1, Kind: EventThrottle, Campaign: "s", GPUs: 1, Class: AgentBurst, Tokens: 59999.96, Cap: 2},
			`{"t": 1, "event": "throttle", "campaign": "s", "gpus": 1, "cls": "agent-burst", "tokens": 60000, "cap": 2}`},
		// Flow throttles: desired and allowed to 2 decimals, tokens to 1.
		{Event{T: 3, Kind: EventThrottleIO, Campaign: "a", Desired: 5.55555, Allowed: 1.23456, Tokens: 2.25},
			`{"t": 3, "event": "throttle-io", "campaign": "a", "desired": 5.56, "allowed": 1.23, "tokens": 2.2}`},
		{Event{T: 3, Kind: EventThrottleInference, Campaign: "a", Desired: 12.345, Allowed: 2.675, Tokens: 0.45},
			`{"t": 3, "event": "throttle-inference", "campaign": "a", "desired": 12.35, "allowed": 2.67, "tokens": 0.5}`},
		{Event{T: 602, Kind: EventPreemptNotice, Lease: 4, Campaign: "backfill", GPUs: 224, Class: Opportunistic, Grace: 60},
			`{"t": 602, "event": "preempt-notice", "lease": 4, "campaign": "backfill", "gpus": 224, "grace": 60}`},
		// Grant: fair_deficit to 4 decimals, tokens to 1.
		{Event{T: 120, Kind: EventGrant, Lease: 6, Campaign: "victim", GPUs: 16, Class: Interactive, Latency: 1, Path: Warm, FairDeficit: 2.0 / 11, RuleTokens: 60000},
			`{"t": 120, "event": "grant", "lease": 6, "campaign": "victim", "gpus": 16, "cls": "interactive", "latency": 1, "path": "warm", "rule": {"class_rank": 1, "fair_deficit": 0.1818, "tokens": 60000}}`},
		{Event{T: 5, Kind: EventGrant, Lease: 9, Campaign: "x", GPUs: 1, Class: Opportunistic, Latency: 80, Path: Cold, FairDeficit: -0.037037, RuleTokens: 10.0 / 3},
			`{"t": 5, "event": "grant", "lease": 9, "campaign": "x", "gpus": 1, "cls": "opportunistic", "latency": 80, "path": "cold", "rule": {"class_rank": 3, "fair_deficit": -0.037, "tokens": 3.3}}`},
		{Event{T: 5, Kind: EventGrant, Lease: 9, Campaign: "x", GPUs: 1, Class: Deadline, Latency: 30, Path: Reclaim, FairDeficit: 0.7777777, RuleTokens: 1234.5678},
			`{"t": 5, "event": "grant", "lease": 9, "campaign": "x", "gpus": 1, "cls": "deadline", "latency": 30, "path": "reclaim", "rule": {"class_rank": 0, "fair_deficit": 0.7778, "tokens": 1234.6}}`},
		// A kind this version does not know still writes its t and event.
		{Event{T: 5, Kind: EventKind(99)}, `{"t": 5, "event": "event(99)"}`},
	} {
		got := string(tc.e.AppendJSON(nil))
		require.Equal(t, tc.want, got)
		require.Equal(t, tc.want, tc.e.String())
		require.True(t, json.Valid([]byte(got)), got)
		require.Equal(t, []string{"t", "event"}, firstKeys(t, got, 2))
	}
}

// AppendJSON appends: it keeps what dst already holds.
func TestAppendJSONAppends(t *testing.T) {
	e := Event{T: 1, Kind: EventDeny, Campaign: "c", GPUs: 1, Class: Deadline, Reason: ReasonBudgetExhausted}
	got := e.AppendJSON([]byte("x\n"))
	require.True(t, bytes.HasPrefix(got, []byte("x\n{\"t\": 1, ")))
}

// firstKeys reads the first n keys of a JSON object in document order.
func firstKeys(t *testing.T, s string, n int) []string {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader([]byte(s)))
	tok, err := d.Token()
	require.NoError(t, err)
	require.Equal(t, json.Delim('{'), tok)
	var keys []string
	for len(keys) < n && d.More() {
		k, err := d.Token()
		require.NoError(t, err)
		keys = append(keys, k.(string))
		var v json.RawMessage
		require.NoError(t, d.Decode(&v))
	}
	return keys
}

// Numbers print as the prototype's JSON does: shortest round-trip digits,
// integral values without a fraction, Python's exponent form outside
// [1e-4, 1e16), and null for what JSON cannot carry.
func TestAppendNumber(t *testing.T) {
	for _, tc := range []struct {
		x    float64
		want string
	}{
		{0, "0"}, {math.Copysign(0, -1), "0"}, {1, "1"}, {-2.5, "-2.5"}, {0.1, "0.1"},
		{1e15, "1000000000000000"}, {1e16, "1e+16"}, {1.5e17, "1.5e+17"},
		{0.0001, "0.0001"}, {1e-5, "1e-05"}, {-1.5e-7, "-1.5e-07"},
		{math.NaN(), "null"}, {math.Inf(1), "null"}, {math.Inf(-1), "null"},
	} {
		require.Equal(t, tc.want, string(appendNumber(nil, tc.x)), "%v", tc.x)
	}
}

func TestPyRound(t *testing.T) {
	for _, tc := range []struct {
		x    float64
		n    int
		want float64
	}{
		{0.123456, 4, 0.1235}, {1.0 / 3, 4, 0.3333}, {2.0 / 3, 4, 0.6667},
		{0.125, 2, 0.12}, {1.005, 2, 1.0}, {0.15, 1, 0.1}, {0.35, 1, 0.3},
		{300000, 1, 300000}, {5e-05, 4, 0.0001},
	} {
		require.Equal(t, tc.want, pyRound(tc.x, tc.n), "round(%v, %d)", tc.x, tc.n)
	}
	require.True(t, math.IsNaN(pyRound(math.NaN(), 2)))
	require.True(t, math.IsInf(pyRound(math.Inf(-1), 2), -1))
}

// Campaign names are the only free text in a record. Whatever they hold,
// every record must stay one line of valid JSON, escaped the way the
// prototype's json.dumps does (ASCII only, \uXXXX otherwise).
func TestJournalEscapesNames(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{`plain-name_1`, `"plain-name_1"`},
		{`quote"back\slash`, `"quote\"back\\slash"`},
		{"tab\tnl\ncr\rbs\bff\f", `"tab\tnl\ncr\rbs\bff\f"`},
		{"nul\x00bell\x07vt\x0besc\x1b", `"nul\u0000bell\u0007vt\u000besc\u001b"`},
		{"del\x7f", `"del\u007f"`},
		{"é", `"\u00e9"`},
		{"line\u2028sep", `"line\u2028sep"`},
		{"😀", `"\ud83d\ude00"`},
		{"bad\xffutf8", `"bad\ufffdutf8"`},
	} {
		e := Event{T: 0, Kind: EventRegister, Campaign: tc.name, Burst: 1}
		line := e.AppendJSON(nil)
		require.True(t, json.Valid(line), "%q gave %s", tc.name, line)
		require.Contains(t, string(line), `"campaign": `+tc.want+`, `)
		require.False(t, bytes.ContainsAny(line, "\n\r"), "one record, one line")
	}
}

// Through the broker: a campaign with such a name journals valid JSON
// Lines.
func TestJournalLinesAreJSONForAnyName(t *testing.T) {
	b, j := newBroker(t, 10)
	c := mustRegister(t, b, env("odd\x00name\v\xfe", 0, 10, 10, 100, AgentBurst))
	mustRequest(t, b, c, 4, 2, AnyClass)
	ticks(b, 3)
	require.Len(t, j.lines(), 3) // register, grant, release
	for _, l := range j.lines() {
		require.True(t, json.Valid([]byte(l)), l)
		var rec struct {
			Campaign string `json:"campaign"`
		}
		require.NoError(t, json.Unmarshal([]byte(l), &rec))
		require.Equal(t, "odd\x00name\v\ufffd", rec.Campaign)
	}
}
