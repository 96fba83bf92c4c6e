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

// TestParseJSON: hand-worked cases of the strict parser: the location and
// status of the first problem, "" when the body is accepted.
func TestParseJSON(t *testing.T) {
	for _, c := range []struct {
		body, loc string
		status    int
	}{
		{`{"a":1,"b":{"a":1}}`, "", 0},
		{`{"a":1,"a":2}`, "body.a", 422},
		{`{"a":{"b":[1,{"c":1,"c":2}]}}`, "body.a.b[1].c", 422},
		{`[1e400]`, "body[0]", 400},
		{`{"x":[0,0,-1e999]}`, "body.x[2]", 400},
		{`{"x":1e-400}`, "", 0},       // underflow is 0, not an error
		{`{"a":1,"a"`, "body.a", 422}, // reported before the syntax error
		{`{"a":`, "body", 400},
		{`not json`, "body", 400},
		{`{"a":1} x`, "body", 400},
		{`{"a":01}`, "body", 400},
		{`{"a":"\ud800"}`, "body", 400},   // unpaired surrogate
		{"{\"a\":\"\xff\"}", "body", 400}, // invalid UTF-8
		{`{"a":"\u00e9\ud83d\ude00"}`, "", 0},
		{`{"` + strings.Repeat("k", 99) + `":1,"` + strings.Repeat("k", 99) + `":2}`, "body." + strings.Repeat("k", 64) + "…", 422},
		{strings.Repeat("[", 32) + strings.Repeat("]", 32), "", 0},
		{strings.Repeat("[", 33) + strings.Repeat("]", 33), "body" + strings.Repeat("[0]", 32), 422},
		{`{"x":` + strings.Repeat("[", 40000), "body.x" + strings.Repeat("[0]", 31), 422},
		{`[` + strings.Repeat("0,", maxValues) + `0]`, "body[1023]", 422},
	} {
		_, p := parseJSON([]byte(c.body), nil, nil)
		if c.loc == "" {
			assert.Nil(t, p, c.body)
			continue
		}
		require.NotNil(t, p, "%.80s", c.body)
		assert.Equal(t, c.loc, p.loc, "%.80s", c.body)
		assert.Equal(t, c.status, p.status, "%.80s", c.body)
	}
}

// TestDecodeIntoExact: keys are matched exactly, case included, and
// integers are never routed through a float.
func TestDecodeIntoExact(t *testing.T) {
	type inner struct {
		Rate float64 `json:"rate"`
	}
	type target struct {
		GPUs int    `json:"gpus"`
		Name string `json:"name"`
		IO   *inner `json:"io,omitempty"`
	}
	var v target
	require.NoError(t, strictUnmarshal([]byte(`{"gpus":9007199254740993,"name":"n","io":{"rate":2.5}}`), &v))
	assert.Equal(t, target{GPUs: 9007199254740993, Name: "n", IO: &inner{Rate: 2.5}}, v)
	for body, loc := range map[string]string{
		`{"GPUS":1}`:            "body.GPUS",
		`{"gpus":1,"Name":"x"}`: "body.Name",
		`{"io":{"Rate":1}}`:     "body.io.Rate",
		`{"gpus":2.0}`:          "body.gpus",
		`{"gpus":"1"}`:          "body.gpus",
	} {
		err := strictUnmarshal([]byte(body), &target{})
		var de *decodeError
		require.ErrorAs(t, err, &de, body)
		assert.Equal(t, loc, de.loc, body)
	}
	require.Error(t, strictUnmarshal([]byte(`{"gpus":1,"gpus":2}`), &target{}))
}

// FuzzStrictJSON: the parser never panics and never accepts what
// encoding/json rejects; what it accepts has exactly the members
// encoding/json counts at the top level (no key silently dropped by a
// duplicate); what it calls a duplicate key names a key that occurs at
// least twice.
func FuzzStrictJSON(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `{"a":1,"a":2}`, `{"a":[1,{"b":2,"b":3}]}`, `[1e400]`, `{}`, `{"a":{"a":1}}`, `"\u00e9"`, `-0.5e+3`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		tree, p := parseJSON(body, nil, nil)
		if p != nil {
			if strings.HasPrefix(p.msg, "duplicate key") {
				key := p.loc[strings.LastIndexByte(p.loc, '.')+1:]
				if !strings.HasSuffix(key, "…") && !strings.ContainsAny(key, "\\\"") {
					assert.GreaterOrEqual(t, bytes.Count(body, []byte(key)), 2, "%s", p.loc)
				}
			}
			return
		}
		var v any
		require.NoError(t, json.Unmarshal(body, &v), "accepted %q", body)
		if m, ok := tree.(map[string]any); ok {
			dec := json.NewDecoder(bytes.NewReader(body))
			members := 0
			_, _ = dec.Token()
			for dec.More() {
				_, _ = dec.Token()
				var raw json.RawMessage
				require.NoError(t, dec.Decode(&raw))
				members++
			}
			assert.Equal(t, members, len(m), "accepted %q", body)
		}
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
		d, err := openDataDir(dir, false, false)
		require.NoError(t, err)
		defer d.Close()
		n, err := loadSnapshot(d, cfg, c.replayOne)
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
