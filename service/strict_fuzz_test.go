package service

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCheckStrictJSON: hand-worked cases of the scanner.
func TestCheckStrictJSON(t *testing.T) {
	for body, want := range map[string]string{
		`{"a":1,"b":{"a":1}}`:           "",
		`{"a":1,"a":2}`:                 "body.a",
		`{"a":{"b":[1,{"c":1,"c":2}]}}`: "body.a.b[1].c",
		`[1e400]`:                       "body[0]",
		`{"x":[0,0,-1e999]}`:            "body.x[2]",
		`{"x":1e-400}`:                  "",       // underflow is 0, not an error
		`{"a":1,"a"`:                    "body.a", // reported before the syntax error
		`{"a":`:                         "",
		`not json`:                      "",
		`{"` + strings.Repeat("k", 99) + `":1,"` + strings.Repeat("k", 99) + `":2}`: "body." + strings.Repeat("k", 64) + "…",
	} {
		p := checkStrictJSON([]byte(body))
		if want == "" {
			assert.Nil(t, p, body)
			continue
		}
		require.NotNil(t, p, body)
		assert.Equal(t, want, p.loc, body)
	}
}

// FuzzStrictJSON: the scanner never panics; what it accepts as valid JSON
// decodes into a map with as many keys as the object has members at the
// top level (no key was silently dropped by a duplicate); what it calls a
// duplicate key names a key that occurs at least twice.
func FuzzStrictJSON(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `{"a":1,"a":2}`, `{"a":[1,{"b":2,"b":3}]}`, `[1e400]`, `{}`, `{"a":{"a":1}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		p := checkStrictJSON(body)
		if p != nil {
			if strings.HasPrefix(p.msg, "duplicate key") {
				key := p.loc[strings.LastIndexByte(p.loc, '.')+1:]
				if !strings.HasSuffix(key, "…") {
					assert.GreaterOrEqual(t, bytes.Count(body, []byte(key)), 2, "%s", p.loc)
				}
			}
			return
		}
		var m map[string]json.RawMessage
		if json.Unmarshal(body, &m) != nil {
			return
		}
		// Count the top-level members the plain way: a key token, then
		// the value skipped whole.
		dec := json.NewDecoder(bytes.NewReader(body))
		members := 0
		if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
			return
		}
		for dec.More() {
			if _, err := dec.Token(); err != nil {
				return
			}
			var v json.RawMessage
			if err := dec.Decode(&v); err != nil {
				return
			}
			members++
		}
		assert.Equal(t, members, len(m), "accepted %s", body)
	})
}

// FuzzLoadSnapshot: a snapshot file of any content never panics the
// loader; a damaged one is an error, never a silent partial state.
func FuzzLoadSnapshot(f *testing.F) {
	var good bytesBuffer
	sw := newSnapshotWriter(&good)
	cfg := testCfg()
	sw.line(&op{Op: opOpen, Version: walVersion, Config: &cfg, Base: 3})
	sw.add(&op{Op: opTicks, T: 3, N: 3})
	require.NoError(f, sw.finish())
	f.Add(good.b)
	f.Add([]byte("#end 00000000 0\n"))
	f.Add(good.b[:len(good.b)-3])
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, snapName), data, 0o600))
		c, err := newCore(cfg, 100, 100, 100)
		require.NoError(t, err)
		n, err := loadSnapshot(dir, cfg, c.replayOne)
		if err != nil {
			return
		}
		assert.Equal(t, int64(c.b.Now()), n-int64(c.b.NumCampaigns())-countOthers(data), "covers what it replayed")
	})
}

// countOthers counts the snapshot lines that are neither ticks nor
// registrations (every other operation stands for one operation and does
// not move the clock).
func countOthers(data []byte) int64 {
	var n int64
	for _, l := range bytes.Split(data, []byte("\n")) {
		if bytes.HasPrefix(l, []byte(`{"op":"`)) && !bytes.HasPrefix(l, []byte(`{"op":"tick`)) &&
			!bytes.HasPrefix(l, []byte(`{"op":"register"`)) && !bytes.HasPrefix(l, []byte(`{"op":"open"`)) {
			n++
		}
	}
	return n
}
