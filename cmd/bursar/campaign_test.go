package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bursar-hpc/bursar/client"
)

// TestCampaignCommand: create registers and writes a 0600 token file that
// works, and never prints the token; an existing file is refused before
// anything is registered; rotate kills the old token; revoke kills every
// token; list shows the campaign. Then the README's service example runs
// as written: a lease with the token from the file.
func TestCampaignCommand(t *testing.T) {
	p := startServe(t, cleanEnv(), "--admin-token-file", tokenFile(t), "--speed", "50")
	dir := t.TempDir()
	env := cleanEnv("BURSAR_SERVER="+p.url, "BURSAR_ADMIN_TOKEN="+testToken)
	tokPath := filepath.Join(dir, "sci.token")
	out, errOut, code := run(t, env, "campaign", "create", "sci", "--gpus", "8", "--rate", "8", "--bucket", "28800", "--token-file", tokPath)
	require.Equal(t, 0, code, "%s%s", out, errOut)
	assert.Contains(t, out, tokPath)
	st, err := os.Stat(tokPath)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	b, err := os.ReadFile(tokPath)
	require.NoError(t, err)
	tok := strings.TrimSpace(string(b))
	assert.NotContains(t, out+errOut, tok, "the token is never printed")
	ctx := context.Background()
	sci, err := client.New(p.url, tok)
	require.NoError(t, err)
	c, err := sci.Campaign(ctx, "sci")
	require.NoError(t, err)
	assert.Equal(t, 8, c.Campaign.Envelope.Guaranteed)
	assert.Equal(t, 8.0, c.Campaign.Envelope.Sustained)
	assert.Equal(t, 28800.0, c.Campaign.Envelope.Bucket)

	// The file exists: refused, and nothing is registered.
	out, errOut, code = run(t, env, "campaign", "create", "other", "--gpus", "1", "--token-file", tokPath)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "--force")
	admin, err := client.New(p.url, testToken)
	require.NoError(t, err)
	list, err := admin.Campaigns(ctx)
	require.NoError(t, err)
	assert.Len(t, list.Campaigns, 1, "%s%s", out, errOut)

	// Rotate: refused without --force, then the old token is dead.
	_, errOut, code = run(t, env, "campaign", "rotate", "sci", "--token-file", tokPath)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "--force")
	out, errOut, code = run(t, env, "campaign", "rotate", "sci", "--token-file", tokPath, "--force")
	require.Equal(t, 0, code, "%s%s", out, errOut)
	_, err = sci.Campaign(ctx, "sci")
	assert.Error(t, err, "the old token is dead")
	b, err = os.ReadFile(tokPath)
	require.NoError(t, err)
	newTok := strings.TrimSpace(string(b))
	assert.NotEqual(t, tok, newTok)
	assert.NotContains(t, out+errOut, newTok)

	// The README's example: a lease with the token read from the file.
	lease := run
	out, errOut, code = lease(t, append(env, "BURSAR_TOKEN="+newTok), "lease", "--campaign", "sci", "--gpus", "4", "--", "true")
	assert.Equal(t, 0, code, "%s%s", out, errOut)

	out, _, code = run(t, env, "campaign", "list")
	require.Equal(t, 0, code)
	assert.Contains(t, out, "sci")

	out, errOut, code = run(t, env, "campaign", "revoke", "sci")
	require.Equal(t, 0, code, "%s%s", out, errOut)
	sci2, err := client.New(p.url, newTok)
	require.NoError(t, err)
	_, err = sci2.Campaign(ctx, "sci")
	assert.Error(t, err, "revoked")

	// No administrator token: a clear error.
	_, errOut, code = run(t, cleanEnv("BURSAR_SERVER="+p.url), "campaign", "list")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "administrator token")
	// A bad name is refused before any request.
	_, errOut, code = run(t, env, "campaign", "create", "a/b", "--gpus", "1", "--token-file", filepath.Join(dir, "x"))
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "must match")
}
