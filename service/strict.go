package service

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/danielgtaylor/huma/v2"
)

// Strict JSON. encoding/json, which huma decodes bodies with, lets the
// last of two equal keys win and reports a number too large for a float64
// as an error of the whole body. Both are checked here first, on the raw
// bytes, so that {"gpus":1,"gpus":500} is refused instead of read as 500
// (two parsers of the same body must not see two different requests) and
// {"gpus":1e400} names body.gpus.

// maxEchoedName bounds a property name or location echoed in a problem:
// an attacker-chosen 500 KB key must not come back as a 500 KB answer.
const maxEchoedName = 64

// capName cuts s to at most maxEchoedName bytes of valid UTF-8.
func capName(s string) string {
	if len(s) <= maxEchoedName {
		return s
	}
	return strings.ToValidUTF8(s[:maxEchoedName], "") + "…"
}

// jsonProblem is the first strictness violation found in a body.
type jsonProblem struct {
	loc, msg string
	status   int
}

// checkStrictJSON scans a JSON body for duplicate keys and numbers outside
// the float64 range. Syntax errors are left to the decoder behind it, which
// reports them with their offset; nil means nothing was found.
func checkStrictJSON(body []byte) *jsonProblem {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	type frame struct {
		object bool
		keys   map[string]struct{}
		path   string
		key    string // the object key whose value comes next
		index  int    // the array index of the next value
		expect bool   // in an object: the next string token is a key
	}
	var stack []*frame
	loc := func() string {
		if len(stack) == 0 {
			return "body"
		}
		f := stack[len(stack)-1]
		if f.object {
			return f.path + "." + capName(f.key)
		}
		return f.path + "[" + strconv.Itoa(f.index) + "]"
	}
	// valueDone advances the enclosing container past one value.
	valueDone := func() {
		if len(stack) == 0 {
			return
		}
		f := stack[len(stack)-1]
		if f.object {
			f.expect = true
		} else {
			f.index++
		}
	}
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil // io.EOF, or a syntax error the decoder will report
		}
		top := (*frame)(nil)
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.object && top.expect {
			if d, ok := tok.(json.Delim); ok && d == '}' {
				stack = stack[:len(stack)-1]
				valueDone()
				continue
			}
			key, _ := tok.(string)
			if _, dup := top.keys[key]; dup {
				return &jsonProblem{loc: top.path + "." + capName(key), status: http.StatusUnprocessableEntity,
					msg: "duplicate key: a property may appear once in an object"}
			}
			top.keys[key] = struct{}{}
			top.key, top.expect = key, false
			continue
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{':
				stack = append(stack, &frame{object: true, keys: map[string]struct{}{}, path: loc(), expect: true})
			case '[':
				stack = append(stack, &frame{path: loc()})
			default: // ']' ('}' is handled above)
				stack = stack[:len(stack)-1]
				valueDone()
			}
		case json.Number:
			if _, err := strconv.ParseFloat(string(v), 64); errors.Is(err, strconv.ErrRange) {
				return &jsonProblem{loc: loc(), status: http.StatusBadRequest,
					msg: fmt.Sprintf("number %s is out of range (beyond ±1.8e308)", capName(string(v)))}
			}
			valueDone()
		default:
			valueDone()
		}
	}
}

// humaContext lets bodyContext embed huma.Context under another field
// name: the interface has a method called Context.
type humaContext = huma.Context

// bodyContext hands huma a body that was already read.
type bodyContext struct {
	humaContext
	body io.Reader
}

func (c bodyContext) BodyReader() io.Reader { return c.body }

// errReader returns err once the bytes before it are read.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// strictBody reads a request body and checks it (checkStrictJSON). It runs
// after authentication, so that an unauthenticated caller learns nothing
// from validation. ok is false when it has answered.
func (s *Service) strictBody(ctx huma.Context) (huma.Context, bool) {
	r := ctx.BodyReader()
	if r == nil {
		return ctx, true
	}
	data, err := io.ReadAll(io.LimitReader(r, MaxBodyBytes))
	var body io.Reader = bytes.NewReader(data)
	if err != nil {
		// huma reports a read error (a timeout: 408) as it would have.
		body = io.MultiReader(body, errReader{err})
	} else if len(data) < MaxBodyBytes && len(data) > 0 {
		if p := checkStrictJSON(data); p != nil {
			_ = huma.WriteErr(s.api, ctx, p.status, "validation failed",
				&huma.ErrorDetail{Location: p.loc, Message: p.msg})
			return ctx, false
		}
	}
	return bodyContext{humaContext: ctx, body: body}, true
}
