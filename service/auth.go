package service

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/danielgtaylor/huma/v2"

	"github.com/bursar-hpc/bursar/policy"
)

// Campaign tokens look like
//
//	bursar_c<campaign id>_<32 hex digits: 128 random bits>
//
// The id is not secret (campaign ids are registration indices); carrying it
// lets the service find the one stored hash to compare against, so that
// checking a token is one constant-time comparison however many campaigns
// there are, and so that a valid token used on another campaign's URL can be
// told apart (403) from a bad one (401).
//
// Only SHA-256 of a token is stored, in memory and in the journal file. A
// slow password hash would add nothing: the secret is 128 uniformly random
// bits, which no dictionary or brute force reaches, and a fast hash keeps
// authentication off the latency path.
const (
	tokenPrefix   = "bursar_c"
	secretBytes   = 16
	maxTokenBytes = 512
	// MinAdminTokenBytes is the shortest administrator token accepted.
	MinAdminTokenBytes = 16
)

// roles an operation can require.
const (
	rolePublic   = "public"
	roleAdmin    = "admin"    // the administrator token only
	roleCampaign = "campaign" // the token of the campaign in the path, or the administrator's
	roleAny      = "any"      // any valid token; the handler scopes what it shows
)

// principal is who a request authenticated as.
type principal struct {
	admin bool
	id    policy.CampaignID
	name  string
	// hash is the campaign token's hash the request authenticated with:
	// a long poll re-checks it, so that a rotation or revocation ends it
	// (stillValid).
	hash [32]byte
}

// stillValid reports whether p's token still reaches its campaign cs: a
// rotation or revocation during a long request ends it with 401 (s.mu
// held).
func (p principal) stillValid(cs *campState) bool {
	return p.admin || !cs.revoked && subtle.ConstantTimeCompare(p.hash[:], cs.hash[:]) == 1
}

func errTokenEnded() error {
	return huma.Error401Unauthorized("the campaign's token was revoked or rotated while the request waited")
}

func (p principal) String() string {
	if p.admin {
		return "admin"
	}
	return "campaign:" + p.name
}

type principalKey struct{}

func principalOf(ctx interface{ Value(any) any }) principal {
	p, _ := ctx.Value(principalKey{}).(principal)
	return p
}

func hashToken(tok string) [32]byte { return sha256.Sum256([]byte(tok)) }

// newCampaignToken draws a token for campaign id.
func newCampaignToken(id policy.CampaignID) (string, error) {
	var secret [secretBytes]byte
	if _, err := rand.Read(secret[:]); err != nil {
		return "", fmt.Errorf("token: %w", err)
	}
	return tokenPrefix + strconv.Itoa(int(id)) + "_" + hex.EncodeToString(secret[:]), nil
}

// parseCampaignToken extracts the campaign id of a well-formed campaign
// token.
func parseCampaignToken(tok string) (policy.CampaignID, bool) {
	rest, ok := strings.CutPrefix(tok, tokenPrefix)
	if !ok {
		return -1, false
	}
	idStr, secret, ok := strings.Cut(rest, "_")
	if !ok || len(idStr) == 0 || len(idStr) > 9 || len(secret) != 2*secretBytes {
		return -1, false
	}
	id := 0
	for _, c := range []byte(idStr) {
		if c < '0' || c > '9' {
			return -1, false
		}
		id = id*10 + int(c-'0')
	}
	for _, c := range []byte(secret) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return -1, false
		}
	}
	return policy.CampaignID(id), true
}

// bearer extracts the token of an "Authorization: Bearer <token>" header.
func bearer(h string) (string, bool) {
	scheme, tok, ok := strings.Cut(strings.TrimSpace(h), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimSpace(tok)
	if tok == "" || len(tok) > maxTokenBytes {
		return "", false
	}
	return tok, true
}

// authenticate resolves a bearer token to a principal.
func (s *Service) authenticate(header string) (principal, bool) {
	tok, ok := bearer(header)
	if !ok {
		return principal{}, false
	}
	h := hashToken(tok)
	if subtle.ConstantTimeCompare(h[:], s.adminHash[:]) == 1 {
		return principal{admin: true, id: -1}, true
	}
	id, ok := parseCampaignToken(tok)
	if !ok {
		return principal{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if int(id) >= len(s.core.camps) {
		return principal{}, false
	}
	cs := s.core.camps[id]
	if subtle.ConstantTimeCompare(h[:], cs.hash[:]) != 1 || cs.revoked {
		return principal{}, false
	}
	return principal{id: id, name: cs.name, hash: h}, true
}

// authMiddleware enforces each operation's role before its input is even
// parsed, so that an unauthenticated caller learns nothing from validation
// errors either.
func (s *Service) authMiddleware(ctx huma.Context, next func(huma.Context)) {
	role, _ := ctx.Operation().Metadata["role"].(string)
	if role == "" || role == rolePublic {
		next(ctx)
		return
	}
	p, ok := s.authenticate(ctx.Header("Authorization"))
	if !ok {
		ctx.SetHeader("WWW-Authenticate", `Bearer realm="bursar"`)
		_ = huma.WriteErr(s.api, ctx, http.StatusUnauthorized,
			"missing or invalid bearer token (send 'Authorization: Bearer <token>')")
		return
	}
	if info := requestInfoOf(ctx.Context()); info != nil {
		info.principal = p.String()
	}
	if onAdmin, _ := ctx.Context().Value(adminConnKey{}).(bool); onAdmin && !p.admin {
		_ = huma.WriteErr(s.api, ctx, http.StatusForbidden, "the administrator listener serves the administrator token only")
		return
	}
	s.trustConn(ctx.Context())
	switch role {
	case roleAdmin:
		if !p.admin {
			_ = huma.WriteErr(s.api, ctx, http.StatusForbidden, "this operation needs the administrator token")
			return
		}
	case roleCampaign:
		if !p.admin && ctx.Param("campaign") != p.name {
			_ = huma.WriteErr(s.api, ctx, http.StatusForbidden, "a campaign token gives access to its own campaign only")
			return
		}
	}
	if !s.limitWrite(ctx, p) {
		return
	}
	tk, ok := s.inflight.enter(p)
	if !ok {
		ctx.SetHeader("Retry-After", "1")
		_ = huma.WriteErr(s.api, ctx, http.StatusTooManyRequests, fmt.Sprintf(
			"campaign %s has too many requests in flight (the campaign tokens together may hold %d connections busy, one campaign %d besides its long polls); retry after 1s",
			p.name, s.inflight.total, s.inflight.perCamp))
		return
	}
	defer tk.release()
	ctx = huma.WithValue(ctx, ticketKey{}, tk)
	ctx, ok = s.strictBody(ctx)
	if !ok {
		return
	}
	next(huma.WithValue(ctx, principalKey{}, p))
}
