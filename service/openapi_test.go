package service_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bursar-hpc/bursar/service"
)

// TestOpenAPI checks the served document: OpenAPI 3.1, every operation
// present with its security requirement, request schemas that require
// their fields, and problem documents for errors.
func TestOpenAPI(t *testing.T) {
	e := newEnv(t, service.Options{})
	code, body := raw(t, e.url, "GET", "/openapi.json", "", "")
	require.Equal(t, 200, code)
	var doc struct {
		OpenAPI    string                               `json:"openapi"`
		Paths      map[string]map[string]map[string]any `json:"paths"`
		Components struct {
			Schemas         map[string]map[string]any `json:"schemas"`
			SecuritySchemes map[string]map[string]any `json:"securitySchemes"`
		} `json:"components"`
	}
	require.NoError(t, json.Unmarshal(body, &doc))
	assert.Equal(t, "3.1.0", doc.OpenAPI)
	assert.Equal(t, "bearer", doc.Components.SecuritySchemes["bearer"]["scheme"])

	want := map[string][]string{
		"/healthz":                                            {"get"},
		"/v1/campaigns":                                       {"get", "post"},
		"/v1/campaigns/{campaign}":                            {"get"},
		"/v1/campaigns/{campaign}/supply":                     {"get"},
		"/v1/campaigns/{campaign}/requests":                   {"post"},
		"/v1/campaigns/{campaign}/requests/{request}":         {"get", "delete"},
		"/v1/campaigns/{campaign}/requests/{request}/wait":    {"get"},
		"/v1/campaigns/{campaign}/leases":                     {"get", "delete"},
		"/v1/campaigns/{campaign}/leases/{lease}":             {"delete"},
		"/v1/campaigns/{campaign}/leases/{lease}/slurm-token": {"post"},
		"/v1/campaigns/{campaign}/consume":                    {"post"},
		"/v1/campaigns/{campaign}/grants":                     {"get"},
		"/v1/campaigns/{campaign}/token":                      {"post", "delete"},
		"/v1/journal":                                         {"get"},
	}
	assert.Len(t, doc.Paths, len(want))
	for path, methods := range want {
		require.Contains(t, doc.Paths, path)
		assert.Len(t, doc.Paths[path], len(methods), path)
		for _, m := range methods {
			op := doc.Paths[path][m]
			require.NotNil(t, op, "%s %s", m, path)
			if path == "/healthz" {
				assert.Nil(t, op["security"])
				continue
			}
			assert.Equal(t, []any{map[string]any{"bearer": []any{}}}, op["security"], "%s %s", m, path)
			responses := op["responses"].(map[string]any)
			for _, status := range []string{"401", "403"} {
				require.Contains(t, responses, status, "%s %s", m, path)
				content := responses[status].(map[string]any)["content"].(map[string]any)
				assert.Contains(t, content, "application/problem+json")
			}
		}
	}
	for name, required := range map[string][]any{
		"CampaignSpec":   {"name", "budget", "guaranteed", "sustained", "burst_ceiling", "bucket", "class"},
		"LeaseRequest":   {"gpus", "duration"},
		"ConsumeRequest": {"io", "inference"},
		"FlowSpec":       {"rate", "bucket", "ceiling"},
	} {
		s := doc.Components.Schemas[name]
		require.NotNil(t, s, name)
		assert.ElementsMatch(t, required, s["required"], name)
		assert.Equal(t, false, s["additionalProperties"], "%s refuses unknown fields", name)
	}
	// Ids are the campaign's own (ids.go): every id a campaign passes or
	// reads says so, so that no client takes them for global ones. Every
	// operation with a request or lease id in its path is checked, so that
	// a new one is written against the campaign's ids too (its handler
	// translates with campState.globalID and answers with the
	// campaign's id).
	idParams := 0
	for path, ops := range doc.Paths {
		for m, op := range ops {
			params, _ := op["parameters"].([]any)
			for _, p := range params {
				p := p.(map[string]any)
				if p["in"] == "path" && (p["name"] == "request" || p["name"] == "lease") {
					idParams++
					assert.Contains(t, p["description"], "campaign's own",
						"%s %s: the %s id in the path is the campaign's own (translate it with campState.globalID, service/ids.go)", m, path, p["name"])
				}
			}
		}
	}
	assert.GreaterOrEqual(t, idParams, 4, "get, delete and wait of a request, delete of a lease")
	for schema, field := range map[string]string{"RequestAccepted": "request_id", "RequestStatus": "request_id", "RequestWait": "request_id",
		"WithdrawResult": "request_id", "PendingRequest": "id", "Lease": "id", "Grant": "lease"} {
		props := doc.Components.Schemas[schema]["properties"].(map[string]any)
		assert.Contains(t, props[field].(map[string]any)["description"], "campaign's own", "%s.%s", schema, field)
	}
	assert.Contains(t, doc.Components.Schemas["JournalRecord"]["properties"].(map[string]any)["record"].(map[string]any)["description"],
		"global id", "the whole journal's ids are the broker's")
	assert.JSONEq(t, string(body), string(e.svc.OpenAPI()))
}
