package service

import (
	"context"
	"encoding/hex"
	"fmt"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"github.com/bursar-hpc/bursar/api"
)

// Token rotation and revocation (issue 22, item 4). Both are journal
// records ("token"), so they survive a restart and are folded into
// snapshots like any other operation: a rotation carries the new token's
// hash, a revocation an empty hash. A revoked campaign keeps its envelope,
// leases and history, but no token reaches it (401) until the
// administrator rotates a new one.

const opToken = "token"

// applyToken sets or clears a campaign's token hash.
func (c *core) applyToken(cs *campState, o *op) (result, bool, error) {
	if o.TokenHash == "" {
		if cs.revoked {
			return result{}, false, nil
		}
		cs.revoked, cs.hash = true, [32]byte{}
		return result{}, true, nil
	}
	var h [32]byte
	if n, err := hex.Decode(h[:], []byte(o.TokenHash)); err != nil || n != len(h) || len(o.TokenHash) != 2*len(h) {
		return result{}, false, fmt.Errorf("%w: token: bad token hash", errReplay)
	}
	cs.hash, cs.revoked = h, false
	return result{}, true, nil
}

type (
	tokenInput struct {
		Campaign string `path:"campaign" pattern:"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$" maxLength:"64" doc:"Campaign name."`
	}
	tokenOutput struct{ Body api.CampaignToken }
)

func (s *Service) registerTokenOperations() {
	operation(s, roleCampaign, huma.Operation{OperationID: "rotate-token", Method: http.MethodPost, Path: "/v1/campaigns/{campaign}/token",
		Summary: "Rotate a campaign's token", Tags: []string{"campaigns"},
		Description: "Draws a new token for the campaign and answers it, once; the old one stops working at once. " +
			"The campaign itself may rotate its token; after a revocation only the administrator can.",
		Errors: []int{http.StatusNotFound}}, s.rotateToken)
	operation(s, roleAdmin, huma.Operation{OperationID: "revoke-token", Method: http.MethodDelete, Path: "/v1/campaigns/{campaign}/token",
		Summary: "Revoke a campaign's token (administrator)", Tags: []string{"campaigns"},
		Description: "No token reaches the campaign any more (401); its leases, requests and history stay. A rotation by the administrator issues a new token.",
		Errors:      []int{http.StatusNotFound}}, s.revokeToken)
}

func (s *Service) rotateToken(ctx context.Context, in *tokenInput) (*tokenOutput, error) {
	var out tokenOutput
	err := s.withState(ctx, func(t *txn) error {
		id, cs, err := t.campaign(in.Campaign)
		if err != nil {
			return err
		}
		tok, err := newCampaignToken(id)
		if err != nil {
			return err
		}
		if _, err := t.apply(&op{Op: opToken, C: int(id), TokenHash: hexHash(hashToken(tok))}); err != nil {
			return err
		}
		out.Body = api.CampaignToken{ID: int(id), Name: cs.name, Token: tok, T: t.c.b.Now()}
		return nil
	})
	if err != nil {
		return nil, err
	}
	s.waits.wake() // the old token's long polls end (401)
	s.log.Info("campaign token rotated", "campaign", out.Body.Name, "by", principalOf(ctx).String())
	return &out, nil
}

func (s *Service) revokeToken(ctx context.Context, in *tokenInput) (*tokenOutput, error) {
	var out tokenOutput
	err := s.withState(ctx, func(t *txn) error {
		id, cs, err := t.campaign(in.Campaign)
		if err != nil {
			return err
		}
		if _, err := t.apply(&op{Op: opToken, C: int(id)}); err != nil {
			return err
		}
		out.Body = api.CampaignToken{ID: int(id), Name: cs.name, Revoked: true, T: t.c.b.Now()}
		return nil
	})
	if err != nil {
		return nil, err
	}
	s.waits.wake() // its long polls end (401)
	s.log.Info("campaign token revoked", "campaign", out.Body.Name)
	return &out, nil
}
