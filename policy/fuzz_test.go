package policy

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// Fuzz tests for everything in policy that reads outside input: class names
// (ParseClass, Class.UnmarshalText), envelopes and broker configs as JSON
// (which read classes through UnmarshalText), and the journal writer, which
// must turn any campaign name and any number into one line of valid JSON.
// Seeds are inline; `go test` runs them as ordinary tests.

func FuzzParseClass(f *testing.F) {
	for _, s := range []string{"deadline", "interactive", "agent-burst", "opportunistic",
		"", "any", "Deadline", "agent_burst", "opportunistic\x00", "class(3)", "é", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseClass(s)
		if err != nil {
			if !strings.Contains(err.Error(), "unknown service class") {
				t.Fatalf("ParseClass(%q): unexpected error %v", s, err)
			}
			return
		}
		// Only the four names parse, and they round-trip exactly.
		if !c.Valid() || c.String() != s {
			t.Fatalf("ParseClass(%q) = %v", s, c)
		}
		text, err := c.MarshalText()
		if err != nil || string(text) != s {
			t.Fatalf("MarshalText(%v) = %q, %v", c, text, err)
		}
	})
}

func FuzzClassUnmarshalText(f *testing.F) {
	for _, s := range []string{"deadline", "interactive", "agent-burst", "opportunistic", "", "bulk", "agent-burst "} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c := Opportunistic
		err := c.UnmarshalText(b)
		want, werr := ParseClass(string(b))
		if (err == nil) != (werr == nil) {
			t.Fatalf("UnmarshalText and ParseClass disagree on %q: %v vs %v", b, err, werr)
		}
		if err != nil {
			if c != Opportunistic {
				t.Fatalf("a failed UnmarshalText(%q) changed the value to %v", b, c)
			}
			return
		}
		if c != want {
			t.Fatalf("UnmarshalText(%q) = %v, ParseClass = %v", b, c, want)
		}
		// The same through encoding/json, as configs and the service read it.
		q, _ := json.Marshal(string(b))
		var viaJSON Class
		if err := json.Unmarshal(q, &viaJSON); err != nil || viaJSON != c {
			t.Fatalf("json %s: %v, %v", q, viaJSON, err)
		}
	})
}

// An envelope read from JSON is either refused by Validate, refused by
// Register (overbooking only), or registered; a registered one survives
// requests and ticks, journals valid JSON and round-trips through JSON.
func FuzzEnvelopeJSON(f *testing.F) {
	for _, s := range []string{
		`{"name":"victim","budget":5000,"guaranteed":32,"sustained":32,"burst_ceiling":64,"bucket":60000,"class":"interactive"}`,
		`{"name":"adaptive-sci","budget":20000,"guaranteed":64,"sustained":128,"burst_ceiling":384,"bucket":300000,"class":"agent-burst","io":{"rate":6,"bucket":3600,"ceiling":16},"inference":{"rate":500,"bucket":100000,"ceiling":2000}}`,
		`{"name":"backfill","budget":1e9,"guaranteed":0,"sustained":512,"burst_ceiling":512,"bucket":1e9,"class":"opportunistic"}`,
		`{"name":"big","guaranteed":9007199254740993,"burst_ceiling":9007199254740993,"sustained":1e308,"bucket":1e308}`,
		`{"name":"neg","guaranteed":-1}`,
		`{"name":"low","guaranteed":8,"burst_ceiling":4}`,
		`{"name":"cls","class":"bulk"}`,
		`{"name":"cls","class":7}`,
		`{"name":"\u0000\n\"","sustained":1}`,
		`{"name":"io","io":{"rate":-1}}`,
		`{}`, `null`, `[]`, `{"name":1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var e Envelope
		if json.Unmarshal(data, &e) != nil {
			return
		}
		verr := e.Validate()
		b, err := New(Config{Pool: 1 << 20, Grace: 60, IOCapacity: 28, InferenceCapacity: Unmetered})
		if err != nil {
			t.Fatal(err)
		}
		j := &journal{}
		b.SetRecorder(j)
		c, rerr := b.Register(e)
		switch {
		case verr != nil:
			if rerr == nil || !errors.Is(rerr, ErrInvalidEnvelope) {
				t.Fatalf("Validate refused (%v) but Register said %v", verr, rerr)
			}
			return
		case rerr != nil:
			if !errors.Is(rerr, ErrOverbooked) || e.Guaranteed <= 1<<20 {
				t.Fatalf("a valid envelope refused: %v", rerr)
			}
			return
		}
		if e.Guaranteed < 0 || e.BurstCeiling < e.Guaranteed || !e.Class.Valid() ||
			math.IsNaN(e.Sustained) || e.Sustained < 0 || e.Bucket < 0 || e.Budget < 0 {
			t.Fatalf("registered an invalid envelope %+v", e)
		}
		if b.Tokens(c) != e.Bucket || b.Credits(c) != e.Budget {
			t.Fatalf("buckets do not start full")
		}
		_, _ = b.Request(c, 1+e.Guaranteed%64, 10, AnyClass)
		_, _, _ = b.Consume(c, 1, 1)
		for range 12 {
			b.Tick()
			if h := b.Held(c, AnyClass); h > b.Config().Pool {
				t.Fatalf("holds %d of a pool of %d", h, b.Config().Pool)
			}
		}
		for _, l := range j.lines() {
			if !json.Valid([]byte(l)) {
				t.Fatalf("invalid journal line %s", l)
			}
		}
		out, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		var back Envelope
		if err := json.Unmarshal(out, &back); err != nil || !reflect.DeepEqual(e, back) {
			t.Fatalf("round trip %s: %+v, %v", out, back, err)
		}
	})
}

// A config read from JSON makes a broker exactly when it validates.
func FuzzConfigJSON(f *testing.F) {
	for _, s := range []string{
		`{"pool":512,"grace":60,"io_capacity":28,"inference_capacity":5000}`,
		`{"pool":512,"grace":60,"grant_time_only":true,"io_capacity":1e12,"inference_capacity":1e12}`,
		`{"pool":0}`, `{"pool":-3}`, `{"pool":1,"grace":-1}`, `{"pool":1,"io_capacity":-0.5}`, `{"pool":1,"io_capacity":1e309}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var cfg Config
		if json.Unmarshal(data, &cfg) != nil {
			return
		}
		b, err := New(cfg)
		if (err == nil) != (cfg.Validate() == nil) {
			t.Fatalf("New and Validate disagree on %+v: %v", cfg, err)
		}
		if err != nil {
			return
		}
		if b.Free() != cfg.Pool || b.FacilityLeft(IO) != cfg.IOCapacity || b.FacilityLeft(Inference) != cfg.InferenceCapacity {
			t.Fatalf("a new broker does not start empty")
		}
		b.Tick()
	})
}

// Whatever the campaign name and the numbers, a journal record is one line
// of valid JSON with t and event first, and reads back the name (invalid
// UTF-8 as U+FFFD).
func FuzzJournalRecord(f *testing.F) {
	f.Add("victim", 0.1818, 60000.0, 12.345, 2.675, uint8(EventGrant))
	f.Add("a\x00\"\\\n\u2028😀\xff", math.Inf(1), math.NaN(), math.Copysign(0, -1), 1e-300, uint8(EventThrottleIO))
	f.Add("", 1e16, 1e-5, -5e-5, 123456789.123, uint8(EventRegister))
	f.Fuzz(func(t *testing.T, name string, x, y, z, w float64, kind uint8) {
		e := Event{T: 3, Kind: EventKind(kind%10 + 1), Campaign: name, GPUs: 2, Lease: 1, Class: Class(kind % 4),
			Reason: name, Sustained: x, Bucket: y, Tokens: z, Desired: w, Allowed: x, FairDeficit: y, RuleTokens: z}
		line := e.AppendJSON(nil)
		if !json.Valid(line) || strings.ContainsAny(string(line), "\n\r") {
			t.Fatalf("not one line of JSON: %s", line)
		}
		var rec map[string]any
		if err := json.Unmarshal(line, &rec); err != nil {
			t.Fatal(err)
		}
		if rec["t"] != 3.0 || rec["event"] != e.Kind.String() {
			t.Fatalf("t and event: %s", line)
		}
		if !strings.HasPrefix(string(line), `{"t": 3, "event": `) {
			t.Fatalf("t and event must come first: %s", line)
		}
		if got, ok := rec["campaign"]; ok {
			want := name
			if !utf8.ValidString(name) {
				// One U+FFFD per invalid byte, as encoding/json writes them
				// (strings.ToValidUTF8 would merge a run into one).
				want = string([]rune(name))
			}
			if got != want {
				t.Fatalf("campaign %q read back as %q", name, got)
			}
		}
		for _, b := range line {
			if b >= 0x80 {
				t.Fatalf("the journal is ASCII, as json.dumps writes it: %s", line)
			}
		}
	})
}

// pyRound(x, n) is a float at most half a unit of the n-th decimal from x,
// and rounding it again changes nothing.
func FuzzPyRound(f *testing.F) {
	for _, x := range []float64{0.125, 2.675, 1.005, -0.037037, 59999.96, 1e300, -1e-300, 5e-324} {
		f.Add(x, uint8(1))
		f.Add(x, uint8(4))
	}
	f.Fuzz(func(t *testing.T, x float64, n uint8) {
		d := int(n % 8)
		r := pyRound(x, d)
		if math.IsNaN(x) || math.IsInf(x, 0) {
			if !(math.IsNaN(r) && math.IsNaN(x)) && r != x {
				t.Fatalf("pyRound(%v) = %v", x, r)
			}
			return
		}
		half := 0.5 * math.Pow(10, -float64(d))
		if math.Abs(r-x) > half*(1+1e-12)+math.Abs(x)*1e-15 {
			t.Fatalf("pyRound(%v, %d) = %v is too far", x, d, r)
		}
		if again := pyRound(r, d); again != r {
			t.Fatalf("pyRound not idempotent: %v → %v → %v", x, r, again)
		}
	})
}
