package service

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/danielgtaylor/huma/v2"
)

// Strict, bounded JSON. Every request body is read by one parser, this
// one: the check before any work (strictBody), huma's schema validation
// (through the JSON format registered in buildAPI) and the value the
// handler receives (decodeInto) all come from parseJSON. encoding/json is
// not used on requests, because it matches keys case-insensitively and
// lets the last of two equal keys win: {"gpus":1,"GPUS":500} would be
// validated as one request and served as another (issue 22).
//
// The parser answers in O(body) time and a bounded number of
// allocations, whatever the body:
//   - nesting deeper than maxDepth, more than maxValues values, or a body
//     of MaxBodyBytes or more are refused before anything else is built;
//   - keys are exact: a key the operation's schema does not name (which is
//     how a case variant like "GPUS" looks) is refused at the first one
//     found, as is a key that appears twice in an object;
//   - a number outside the float64 range is refused and named;
//   - every refusal names one location, capped (maxEchoedName), so that an
//     attacker's 500 KB key or 5,000 unknown keys come back as a few
//     hundred bytes.

const (
	// maxDepth bounds nesting: the deepest real body (a campaign's io
	// envelope) is 2 deep.
	maxDepth = 32
	// maxValues bounds the values (scalars, objects, arrays and their
	// members) of one body; a registration has 16.
	maxValues = 1024
	// maxEchoedName bounds a property name or location echoed in a problem:
	// an attacker-chosen 500 KB key must not come back as a 500 KB answer.
	maxEchoedName = 64
)

// capName cuts s to at most maxEchoedName bytes of valid UTF-8.
func capName(s string) string {
	if len(s) <= maxEchoedName {
		return s
	}
	return strings.ToValidUTF8(s[:maxEchoedName], "") + "…"
}

// jsonProblem is why a body is refused.
type jsonProblem struct {
	loc, msg string
	status   int
}

func (p *jsonProblem) Error() string { return p.loc + ": " + p.msg }

// jsonNumber is a number as written: it is converted where its type is
// known (decodeInto), so that an integer is never routed through a float.
type jsonNumber string

// jsonParser is a recursive-descent parser over one body. reg resolves
// schema references when a schema is given.
type jsonParser struct {
	data   []byte
	pos    int
	values int
	reg    huma.Registry
	path   []string // location segments of the value being parsed
}

// parseJSON parses a whole body. With a schema, keys the schema does not
// allow are refused as they are met.
func parseJSON(data []byte, reg huma.Registry, schema *huma.Schema) (any, *jsonProblem) {
	p := &jsonParser{data: data, reg: reg}
	p.space()
	v, prob := p.value(0, schema)
	if prob != nil {
		return nil, prob
	}
	p.space()
	if p.pos < len(p.data) {
		return nil, p.syntax("data after the end of the JSON value")
	}
	return v, nil
}

func (p *jsonParser) loc() string {
	var b strings.Builder
	b.WriteString("body")
	for _, s := range p.path {
		if s != "" && s[0] == '[' {
			b.WriteString(s)
		} else {
			b.WriteString(".")
			b.WriteString(capName(s))
		}
		if b.Len() > 4*maxEchoedName {
			return capMessage(b.String())
		}
	}
	return b.String()
}

func (p *jsonParser) syntax(what string) *jsonProblem {
	return &jsonProblem{loc: "body", status: http.StatusBadRequest,
		msg: fmt.Sprintf("invalid JSON at offset %d: %s", p.pos, what)}
}

func (p *jsonParser) refuse(status int, msg string) *jsonProblem {
	return &jsonProblem{loc: p.loc(), status: status, msg: msg}
}

func (p *jsonParser) space() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

// resolve follows a schema's references.
func (p *jsonParser) resolve(s *huma.Schema) *huma.Schema {
	for s != nil && s.Ref != "" && p.reg != nil {
		s = p.reg.SchemaFromRef(s.Ref)
	}
	return s
}

func (p *jsonParser) value(depth int, schema *huma.Schema) (any, *jsonProblem) {
	if p.values++; p.values > maxValues {
		return nil, p.refuse(http.StatusUnprocessableEntity, fmt.Sprintf("the body has more than %d values", maxValues))
	}
	if p.pos >= len(p.data) {
		return nil, p.syntax("unexpected end of input")
	}
	switch c := p.data[p.pos]; {
	case c == '{' || c == '[':
		if depth >= maxDepth {
			return nil, p.refuse(http.StatusUnprocessableEntity, fmt.Sprintf("nested deeper than %d levels", maxDepth))
		}
		if c == '{' {
			return p.object(depth+1, p.resolve(schema))
		}
		return p.array(depth+1, p.resolve(schema))
	case c == '"':
		return p.str()
	case c == 't':
		return true, p.literal("true")
	case c == 'f':
		return false, p.literal("false")
	case c == 'n':
		return nil, p.literal("null")
	case c == '-' || '0' <= c && c <= '9':
		return p.number()
	default:
		return nil, p.syntax(fmt.Sprintf("unexpected character %q", c))
	}
}

func (p *jsonParser) literal(word string) *jsonProblem {
	if !bytes.HasPrefix(p.data[p.pos:], []byte(word)) {
		return p.syntax("invalid literal")
	}
	p.pos += len(word)
	return nil
}

func (p *jsonParser) object(depth int, schema *huma.Schema) (any, *jsonProblem) {
	p.pos++ // {
	m := map[string]any{}
	closed := schema != nil && schema.Properties != nil
	if closed {
		addl, isBool := schema.AdditionalProperties.(bool)
		closed = isBool && !addl
	}
	p.space()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		return m, nil
	}
	for {
		p.space()
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return nil, p.syntax("expected a string key")
		}
		k, prob := p.str()
		if prob != nil {
			return nil, prob
		}
		key := k.(string)
		p.path = append(p.path, key)
		if _, dup := m[key]; dup {
			return nil, p.refuse(http.StatusUnprocessableEntity, "duplicate key: a property may appear once in an object")
		}
		var sub *huma.Schema
		if schema != nil {
			sub = schema.Properties[key]
		}
		if closed && sub == nil {
			return nil, p.refuse(http.StatusUnprocessableEntity, "unexpected property (names are exact, case included)")
		}
		p.space()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return nil, p.syntax("expected ':' after a key")
		}
		p.pos++
		p.space()
		v, prob := p.value(depth, sub)
		if prob != nil {
			return nil, prob
		}
		m[key] = v
		p.path = p.path[:len(p.path)-1]
		p.space()
		if p.pos >= len(p.data) {
			return nil, p.syntax("unexpected end of input in an object")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case '}':
			p.pos++
			return m, nil
		default:
			return nil, p.syntax("expected ',' or '}' in an object")
		}
	}
}

func (p *jsonParser) array(depth int, schema *huma.Schema) (any, *jsonProblem) {
	p.pos++ // [
	var items *huma.Schema
	if schema != nil {
		items = schema.Items
	}
	a := []any{}
	p.space()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		return a, nil
	}
	for {
		p.space()
		p.path = append(p.path, "["+strconv.Itoa(len(a))+"]")
		v, prob := p.value(depth, items)
		if prob != nil {
			return nil, prob
		}
		p.path = p.path[:len(p.path)-1]
		a = append(a, v)
		p.space()
		if p.pos >= len(p.data) {
			return nil, p.syntax("unexpected end of input in an array")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case ']':
			p.pos++
			return a, nil
		default:
			return nil, p.syntax("expected ',' or ']' in an array")
		}
	}
}

// str parses a string. Invalid UTF-8 and unpaired surrogates are refused
// (encoding/json would replace them silently: two readings again).
func (p *jsonParser) str() (any, *jsonProblem) {
	p.pos++ // "
	start := p.pos
	// Fast path: no escapes.
	for p.pos < len(p.data) {
		c := p.data[p.pos]
		if c == '"' {
			s := p.data[start:p.pos]
			if !utf8.Valid(s) {
				return nil, p.syntax("invalid UTF-8 in a string")
			}
			p.pos++
			return string(s), nil
		}
		if c == '\\' || c < 0x20 {
			break
		}
		p.pos++
	}
	buf := append([]byte(nil), p.data[start:p.pos]...)
	for p.pos < len(p.data) {
		c := p.data[p.pos]
		switch {
		case c == '"':
			if !utf8.Valid(buf) {
				return nil, p.syntax("invalid UTF-8 in a string")
			}
			p.pos++
			return string(buf), nil
		case c < 0x20:
			return nil, p.syntax("control character in a string")
		case c != '\\':
			buf = append(buf, c)
			p.pos++
			continue
		}
		p.pos++ // backslash
		if p.pos >= len(p.data) {
			break
		}
		e := p.data[p.pos]
		p.pos++
		switch e {
		case '"', '\\', '/':
			buf = append(buf, e)
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		case 'u':
			r, ok := p.hex4()
			if !ok {
				return nil, p.syntax("invalid \\u escape")
			}
			if utf16.IsSurrogate(r) {
				if !bytes.HasPrefix(p.data[p.pos:], []byte(`\u`)) {
					return nil, p.syntax("unpaired surrogate in a string")
				}
				p.pos += 2
				r2, ok := p.hex4()
				if r = utf16.DecodeRune(r, r2); !ok || r == utf8.RuneError {
					return nil, p.syntax("unpaired surrogate in a string")
				}
			}
			buf = utf8.AppendRune(buf, r)
		default:
			return nil, p.syntax("invalid escape in a string")
		}
	}
	return nil, p.syntax("unexpected end of input in a string")
}

func (p *jsonParser) hex4() (rune, bool) {
	if p.pos+4 > len(p.data) {
		return 0, false
	}
	var r rune
	for _, c := range p.data[p.pos : p.pos+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	p.pos += 4
	return r, true
}

// number parses a number as JSON writes it (RFC 8259 §6).
func (p *jsonParser) number() (any, *jsonProblem) {
	start := p.pos
	digits := func() int {
		n := 0
		for p.pos < len(p.data) && '0' <= p.data[p.pos] && p.data[p.pos] <= '9' {
			p.pos++
			n++
		}
		return n
	}
	if p.data[p.pos] == '-' {
		p.pos++
	}
	if p.pos < len(p.data) && p.data[p.pos] == '0' {
		p.pos++
	} else if digits() == 0 {
		return nil, p.syntax("invalid number")
	}
	if p.pos < len(p.data) && p.data[p.pos] == '.' {
		p.pos++
		if digits() == 0 {
			return nil, p.syntax("invalid number")
		}
	}
	if p.pos < len(p.data) && (p.data[p.pos] == 'e' || p.data[p.pos] == 'E') {
		p.pos++
		if p.pos < len(p.data) && (p.data[p.pos] == '+' || p.data[p.pos] == '-') {
			p.pos++
		}
		if digits() == 0 {
			return nil, p.syntax("invalid number")
		}
	}
	lit := string(p.data[start:p.pos])
	if _, err := strconv.ParseFloat(lit, 64); errors.Is(err, strconv.ErrRange) {
		return nil, p.refuse(http.StatusBadRequest, fmt.Sprintf("number %s is out of range (beyond ±1.8e308)", capName(lit)))
	}
	return jsonNumber(lit), nil
}

// plain turns a parsed tree into the shapes huma's validator expects
// (numbers as float64, as encoding/json would give them).
func plain(v any) any {
	switch x := v.(type) {
	case jsonNumber:
		f, _ := strconv.ParseFloat(string(x), 64)
		return f
	case map[string]any:
		for k, e := range x {
			x[k] = plain(e)
		}
	case []any:
		for i, e := range x {
			x[i] = plain(e)
		}
	}
	return v
}

// strictUnmarshal is the JSON format's decoder (buildAPI): huma calls it
// once into an any for schema validation and once into the input's Body.
func strictUnmarshal(data []byte, v any) error {
	tree, prob := parseJSON(data, nil, nil)
	if prob != nil {
		return prob
	}
	if pa, ok := v.(*any); ok {
		*pa = plain(tree)
		return nil
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("decode into %T: not a pointer", v)
	}
	return decodeInto(tree, rv.Elem(), "body")
}

// decodeError names the field a value does not fit; problemTransformer
// moves the location out of the message.
type decodeError struct{ loc, msg string }

func (e *decodeError) Error() string { return "at " + e.loc + ": " + e.msg }

// fieldsOf maps a struct type's JSON names (exactly as tagged) to field
// indices.
var fieldCache sync.Map // reflect.Type -> map[string]int

func fieldsOf(t reflect.Type) map[string]int {
	if m, ok := fieldCache.Load(t); ok {
		return m.(map[string]int)
	}
	m := map[string]int{}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		m[name] = i
	}
	fieldCache.Store(t, m)
	return m
}

// decodeInto stores a parsed tree in v, matching keys exactly.
func decodeInto(tree any, v reflect.Value, loc string) error {
	if tree == nil {
		if v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface || v.Kind() == reflect.Map || v.Kind() == reflect.Slice {
			v.SetZero()
		}
		return nil
	}
	wrong := func(want string) error {
		return &decodeError{loc: capLocation(loc), msg: fmt.Sprintf("expected %s", want)}
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		return decodeInto(tree, v.Elem(), loc)
	case reflect.Interface:
		v.Set(reflect.ValueOf(plain(tree)))
		return nil
	case reflect.Struct:
		m, ok := tree.(map[string]any)
		if !ok {
			return wrong("an object")
		}
		fields := fieldsOf(v.Type())
		for k, e := range m {
			i, ok := fields[k]
			if !ok {
				return &decodeError{loc: capLocation(loc + "." + capName(k)), msg: "unexpected property (names are exact, case included)"}
			}
			if err := decodeInto(e, v.Field(i), loc+"."+k); err != nil {
				return err
			}
		}
		return nil
	case reflect.Map:
		m, ok := tree.(map[string]any)
		if !ok || v.Type().Key().Kind() != reflect.String {
			return wrong("an object")
		}
		if v.IsNil() {
			v.Set(reflect.MakeMapWithSize(v.Type(), len(m)))
		}
		for k, e := range m {
			ev := reflect.New(v.Type().Elem()).Elem()
			if err := decodeInto(e, ev, loc+"."+k); err != nil {
				return err
			}
			v.SetMapIndex(reflect.ValueOf(k).Convert(v.Type().Key()), ev)
		}
		return nil
	case reflect.Slice:
		a, ok := tree.([]any)
		if !ok {
			return wrong("an array")
		}
		s := reflect.MakeSlice(v.Type(), len(a), len(a))
		for i, e := range a {
			if err := decodeInto(e, s.Index(i), loc+"["+strconv.Itoa(i)+"]"); err != nil {
				return err
			}
		}
		v.Set(s)
		return nil
	case reflect.String:
		s, ok := tree.(string)
		if !ok {
			return wrong("a string")
		}
		v.SetString(s)
		return nil
	case reflect.Bool:
		b, ok := tree.(bool)
		if !ok {
			return wrong("a boolean")
		}
		v.SetBool(b)
		return nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, ok := tree.(jsonNumber)
		if !ok {
			return wrong("an integer")
		}
		i, err := strconv.ParseInt(string(n), 10, v.Type().Bits())
		if err != nil {
			return wrong(fmt.Sprintf("an integer of %d bits, got %s", v.Type().Bits(), capName(string(n))))
		}
		v.SetInt(i)
		return nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, ok := tree.(jsonNumber)
		if !ok {
			return wrong("an integer")
		}
		u, err := strconv.ParseUint(string(n), 10, v.Type().Bits())
		if err != nil {
			return wrong(fmt.Sprintf("an unsigned integer of %d bits, got %s", v.Type().Bits(), capName(string(n))))
		}
		v.SetUint(u)
		return nil
	case reflect.Float32, reflect.Float64:
		n, ok := tree.(jsonNumber)
		if !ok {
			return wrong("a number")
		}
		f, err := strconv.ParseFloat(string(n), v.Type().Bits())
		if err != nil || math.IsInf(f, 0) {
			return wrong(fmt.Sprintf("a number within float%d range, got %s", v.Type().Bits(), capName(string(n))))
		}
		v.SetFloat(f)
		return nil
	}
	return fmt.Errorf("decode into %s: unsupported type", v.Type())
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

// requestSchema is the JSON schema of an operation's body, nil when it
// takes none.
func requestSchema(op *huma.Operation) *huma.Schema {
	if op == nil || op.RequestBody == nil {
		return nil
	}
	mt := op.RequestBody.Content["application/json"]
	if mt == nil {
		return nil
	}
	return mt.Schema
}

// strictBody reads and checks the body of an operation that takes one. It
// runs after authentication, so that an unauthenticated caller learns
// nothing from validation. ok is false when it has answered. Failing reads
// are answered here too, as 4xx: a slow body is 408, a body over the limit
// 413, and a short or badly chunked one 400 (the client's fault, never a
// 500).
func (s *Service) strictBody(ctx huma.Context) (huma.Context, bool) {
	schema := requestSchema(ctx.Operation())
	r := ctx.BodyReader()
	if r == nil || schema == nil {
		return ctx, true
	}
	data, err := io.ReadAll(io.LimitReader(r, MaxBodyBytes+1))
	if err != nil {
		status, msg := http.StatusBadRequest, "the request body could not be read (cut short, or bad chunked encoding)"
		var maxErr *http.MaxBytesError
		var netErr net.Error
		switch {
		case errors.As(err, &maxErr):
			status, msg = http.StatusRequestEntityTooLarge, fmt.Sprintf("the request body is larger than %d bytes", MaxBodyBytes)
		case errors.As(err, &netErr) && netErr.Timeout():
			status, msg = http.StatusRequestTimeout, "the request body was not received in time"
		}
		_ = huma.WriteErr(s.api, ctx, status, msg)
		return ctx, false
	}
	if len(data) > MaxBodyBytes {
		_ = huma.WriteErr(s.api, ctx, http.StatusRequestEntityTooLarge, fmt.Sprintf("the request body is larger than %d bytes", MaxBodyBytes))
		return ctx, false
	}
	if len(data) > 0 {
		if _, p := parseJSON(data, s.api.OpenAPI().Components.Schemas, schema); p != nil {
			_ = huma.WriteErr(s.api, ctx, p.status, "validation failed",
				&huma.ErrorDetail{Location: p.loc, Message: p.msg})
			return ctx, false
		}
	}
	return bodyContext{humaContext: ctx, body: bytes.NewReader(data)}, true
}
