package service

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humago"
)

// APIVersion is the version of the HTTP API in the OpenAPI document.
const APIVersion = "1.0.0"

const apiDescription = `Bursar meters how fast autonomous agent campaigns may consume a shared GPU pool.

An administrator registers each campaign with its envelope (guarantee, sustained rate R, token bucket B, burst ceiling, class, credit budget, io and inference flow buckets) and receives the campaign's bearer token once. The campaign's agent then reads its supply, files requests for GPUs (202: admission happens at the broker's next tick), polls for the grant, meters its io and inference through consume, and releases what it no longer needs.

Authentication: 'Authorization: Bearer <token>'. A campaign token reads and changes only its own campaign (another campaign's URL is 403); the administrator token may do everything. A missing or bad token is 401. Every error is an RFC 9457 problem document; field errors name the field ('body.gpus', 'query.class').

Time is broker time: one tick is one broker second, and the service ticks at --speed ticks per wall-clock second.`

// buildAPI registers every operation and renders the OpenAPI document once
// (it does not change after start).
func (s *Service) buildAPI() error {
	mux := http.NewServeMux()
	cfg := huma.DefaultConfig("Bursar", APIVersion)
	cfg.Info.Description = apiDescription
	// The document is served from a pre-rendered copy below; the docs UI
	// would load scripts from a CDN, and the schema links would add a
	// $schema field to every answer.
	cfg.OpenAPIPath, cfg.DocsPath, cfg.SchemasPath = "", "", ""
	cfg.CreateHooks = nil
	cfg.Components.SecuritySchemes = map[string]*huma.SecurityScheme{
		"bearer": {Type: "http", Scheme: "bearer",
			Description: "The administrator token, or a campaign token (bursar_c<id>_<32 hex digits>) as returned once by registration."},
	}
	cfg.Transformers = append(cfg.Transformers, problemTransformer)
	// Requests are read by the strict parser only (strict.go): its
	// decoder feeds both huma's validation and the handlers' inputs.
	strictJSON := huma.Format{Marshal: huma.DefaultJSONFormat.Marshal, Unmarshal: strictUnmarshal}
	cfg.Formats = map[string]huma.Format{"application/json": strictJSON, "json": strictJSON}
	// Validation matches property names exactly, as the parser does.
	huma.ValidateStrictCasing = true
	s.api = humago.New(mux, cfg)
	s.api.UseMiddleware(s.authMiddleware)
	s.registerOperations()

	spec, err := json.Marshal(s.api.OpenAPI())
	if err != nil {
		return fmt.Errorf("service: render OpenAPI: %w", err)
	}
	s.spec = spec
	mux.HandleFunc("GET /openapi.json", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/openapi+json")
		_, _ = w.Write(s.spec)
	})
	mux.HandleFunc("GET /metrics", s.metrics)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		// The catch-all route hides the mux's own 405: find the methods
		// the path does have.
		if allow := allowedMethods(mux, r); len(allow) > 0 {
			w.Header().Set("Allow", strings.Join(allow, ", "))
			writeProblem(w, http.StatusMethodNotAllowed, fmt.Sprintf("%s is not allowed on %s; allowed: %s",
				r.Method, capMessage(r.URL.Path), strings.Join(allow, ", ")))
			return
		}
		writeProblem(w, http.StatusNotFound, fmt.Sprintf("no operation %s %s (the API is described at /openapi.json)", capName(r.Method), capMessage(r.URL.Path)))
	})
	s.handler = s.outer(mux)
	return nil
}

// allowedMethods lists the methods that have a route for r's path.
func allowedMethods(mux *http.ServeMux, r *http.Request) []string {
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		if m == r.Method {
			continue
		}
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := mux.Handler(probe); pattern != "" && pattern != "/" {
			allow = append(allow, m)
		}
	}
	return allow
}

// Huma reports a missing property at the object that lacks it ("body")
// and a number that does not fit a Go int at the whole body; both name the
// field only in the message. These patterns move the name into location,
// so that every field error says which field it is about.
var (
	missingProperty = regexp.MustCompile(`^expected required property (\S+) to be present$`)
	decodeLocation  = regexp.MustCompile(`^at (body\S*): `)
	goFieldType     = regexp.MustCompile(`Go struct field \w+\.(\S+) of type`)
)

// problemTransformer polishes problem documents: field locations as above,
// and echoed values cut short (a malformed body is otherwise echoed whole,
// up to the 1 MiB limit).
func problemTransformer(_ huma.Context, _ string, v any) (any, error) {
	em, ok := v.(*huma.ErrorModel)
	if !ok {
		return v, nil
	}
	// A handful of field errors says what is wrong; hundreds only make
	// the answer large.
	if len(em.Errors) > maxProblemErrors {
		em.Errors = em.Errors[:maxProblemErrors]
	}
	for _, d := range em.Errors {
		// Unknown property errors carry the name in both; it is the
		// caller's, so it is capped (a 500 KB key, a 500 KB answer).
		d.Location, d.Message = capLocation(d.Location), capMessage(d.Message)
		if m := missingProperty.FindStringSubmatch(d.Message); m != nil {
			d.Location += "." + m[1]
			d.Value = nil
		} else if m := goFieldType.FindStringSubmatch(d.Message); m != nil && d.Location == "body" {
			d.Location += "." + m[1]
		} else if m := decodeLocation.FindStringSubmatch(d.Message); m != nil && d.Location == "body" {
			d.Location, d.Message = m[1], strings.TrimPrefix(d.Message, m[0])
		}
		d.Value = shortValue(d.Value)
	}
	return v, nil
}

// maxProblemErrors is the most field errors one problem lists.
const maxProblemErrors = 8

// capLocation caps each dotted part of a location.
func capLocation(loc string) string {
	if len(loc) <= 4*maxEchoedName {
		return loc
	}
	parts := strings.Split(loc, ".")
	for i, p := range parts {
		parts[i] = capName(p)
	}
	return capMessage(strings.Join(parts, "."))
}

// capMessage cuts a message that echoes a caller's input.
func capMessage(m string) string {
	const most = 256
	if len(m) <= most {
		return m
	}
	return strings.ToValidUTF8(m[:most], "") + "…"
}

// shortValue keeps an echoed value when it is short and replaces it with
// the start of its JSON text when it is not (the value of an unexpected
// property error is the whole enclosing object).
func shortValue(v any) any {
	const most = 256
	switch x := v.(type) {
	case nil, bool, float64, int, int64:
		return v
	case string:
		if len(x) <= most {
			return v
		}
		return strings.ToValidUTF8(x[:most], "") + "…"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	if len(b) <= most {
		return v
	}
	return strings.ToValidUTF8(string(b[:most]), "") + "…"
}

// operation registers one operation with the role it requires.
func operation[I, O any](s *Service, role string, op huma.Operation, h func(context.Context, *I) (*O, error)) {
	op.Metadata = map[string]any{"role": role}
	op.MaxBodyBytes = MaxBodyBytes
	if role != rolePublic {
		op.Security = []map[string][]string{{"bearer": {}}}
		op.Errors = append(op.Errors, http.StatusUnauthorized, http.StatusForbidden)
	}
	if role == roleCampaign && op.Method != http.MethodGet {
		op.Errors = append(op.Errors, http.StatusTooManyRequests) // the write rate limit (tenant.go)
	}
	op.Errors = append(op.Errors, http.StatusServiceUnavailable)
	huma.Register(s.api, op, h)
}
