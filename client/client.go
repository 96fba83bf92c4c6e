package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// maxResponseBytes bounds what the client reads of one answer, so that a
// misbehaving server cannot make an agent allocate without limit. The
// largest legitimate answer, a full journal page, is far below it.
const maxResponseBytes = 32 << 20

// Client talks to one Bursar service with one bearer token (an
// administrator's or a campaign's). It is safe for concurrent use.
type Client struct {
	base  *url.URL
	raw   string // the address as given (a unix: one included)
	token string
	hc    *http.Client
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient makes the client send its requests through hc (for
// timeouts, transports or tests). The default is a client with a 30 s
// overall timeout.
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.hc = hc } }

// UnixPrefix starts the address of a service listening on a Unix socket:
// "unix:/run/bursar/bursar.sock".
const UnixPrefix = "unix:"

// New returns a client of the service at baseURL (e.g.
// "http://127.0.0.1:8642", or "unix:/path/to/bursar.sock" for a service
// listening on a Unix socket) that authenticates with token ("" for none).
func New(baseURL, token string, opts ...Option) (*Client, error) {
	if sock, ok := strings.CutPrefix(baseURL, UnixPrefix); ok {
		return newUnix(baseURL, sock, token, opts)
	}
	u, err := url.Parse(strings.TrimRight(baseURL, "/"))
	if err != nil {
		return nil, fmt.Errorf("client: base URL %q: %w", baseURL, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("client: base URL %q: want an http:// or https:// URL", baseURL)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("client: base URL %q has no host", baseURL)
	}
	c := &Client{base: u, raw: u.String(), token: token, hc: &http.Client{Timeout: 30 * time.Second}}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

// newUnix makes a client whose requests go over the Unix socket at sock,
// whatever HTTP client the options give (its transport is copied with
// the socket as the only destination).
func newUnix(raw, sock, token string, opts []Option) (*Client, error) {
	if sock == "" {
		return nil, fmt.Errorf("client: base URL %q names no socket", raw)
	}
	c := &Client{base: &url.URL{Scheme: "http", Host: "bursar.sock"}, raw: raw, token: token, hc: &http.Client{Timeout: 30 * time.Second}}
	for _, o := range opts {
		o(c)
	}
	hc := *c.hc
	tr, ok := hc.Transport.(*http.Transport)
	if hc.Transport == nil || !ok {
		tr = http.DefaultTransport.(*http.Transport)
	}
	tr = tr.Clone()
	tr.Proxy = nil
	tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}
	hc.Transport = tr
	c.hc = &hc
	return c, nil
}

// WithToken returns a client of the same service that authenticates with
// token instead: the usual step after an administrator registers a
// campaign.
func (c *Client) WithToken(token string) *Client {
	cp := *c
	cp.token = token
	return &cp
}

// BaseURL is the service address the client talks to.
func (c *Client) BaseURL() string { return c.raw }

func campaignPath(name string, rest ...string) string {
	p := "/v1/campaigns/" + url.PathEscape(name)
	for _, r := range rest {
		p += "/" + r
	}
	return p
}

// do sends one request and decodes a 2xx answer into out (when non-nil); any
// other answer becomes an *Error carrying the problem body.
func (c *Client) do(ctx context.Context, method, path string, query url.Values, in, out any) error {
	u := *c.base
	u.Path = c.base.Path + path
	if len(query) > 0 {
		u.RawQuery = query.Encode()
	}
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("%s %s: encode request: %w", method, path, err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return fmt.Errorf("%s %s: read answer: %w", method, path, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		e := &Error{Method: method, Path: path, StatusCode: resp.StatusCode}
		// A body that is not a problem document still yields an *Error
		// with the status; the detail is then the start of the body.
		if json.Unmarshal(data, &e.Problem) != nil {
			e.Problem = Problem{Status: resp.StatusCode, Detail: strings.TrimSpace(string(data[:min(len(data), 200)]))}
		}
		return e
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%s %s: decode answer: %w", method, path, err)
	}
	return nil
}

// Health reads the liveness endpoint (no token needed).
func (c *Client) Health(ctx context.Context) (*Health, error) {
	var out Health
	return &out, c.do(ctx, http.MethodGet, "/healthz", nil, nil, &out)
}

// Register registers a campaign (administrator token). The answer holds
// the campaign's token, which the service never shows again.
func (c *Client) Register(ctx context.Context, spec CampaignSpec) (*Registration, error) {
	var out Registration
	return &out, c.do(ctx, http.MethodPost, "/v1/campaigns", nil, spec, &out)
}

// RotateToken draws a new token for campaign name (the administrator's
// token, or the campaign's own); the old one stops working at once. The
// answer holds the new token, which the service never shows again.
func (c *Client) RotateToken(ctx context.Context, name string) (*CampaignToken, error) {
	var out CampaignToken
	return &out, c.do(ctx, http.MethodPost, campaignPath(name, "token"), nil, nil, &out)
}

// RevokeToken revokes campaign name's token (administrator token): no
// token reaches the campaign until the administrator rotates a new one.
func (c *Client) RevokeToken(ctx context.Context, name string) (*CampaignToken, error) {
	var out CampaignToken
	return &out, c.do(ctx, http.MethodDelete, campaignPath(name, "token"), nil, nil, &out)
}

// Campaigns lists every campaign (administrator token).
func (c *Client) Campaigns(ctx context.Context) (*CampaignList, error) {
	var out CampaignList
	return &out, c.do(ctx, http.MethodGet, "/v1/campaigns", nil, nil, &out)
}

// Campaign reads one campaign's envelope and standing.
func (c *Client) Campaign(ctx context.Context, name string) (*CampaignOut, error) {
	var out CampaignOut
	return &out, c.do(ctx, http.MethodGet, campaignPath(name), nil, nil, &out)
}

// Supply reads what campaign name can see of the pool before it asks.
func (c *Client) Supply(ctx context.Context, name string) (*Supply, error) {
	var out Supply
	return &out, c.do(ctx, http.MethodGet, campaignPath(name, "supply"), nil, nil, &out)
}

// Request files a request for GPUs. It is queued, not granted: poll
// RequestStatus or use WaitGrant. A campaign out of credits asking for a
// class other than opportunistic gets an error that matches
// ErrBudgetExhausted.
func (c *Client) Request(ctx context.Context, name string, r LeaseRequest) (*RequestAccepted, error) {
	var out RequestAccepted
	return &out, c.do(ctx, http.MethodPost, campaignPath(name, "requests"), nil, r, &out)
}

// RequestStatus says whether request id is pending or granted. A request
// that is neither (expired, withdrawn, or its grant no longer retained)
// answers ErrNotFound.
func (c *Client) RequestStatus(ctx context.Context, name string, id int) (*RequestStatus, error) {
	var out RequestStatus
	return &out, c.do(ctx, http.MethodGet, campaignPath(name, "requests", strconv.Itoa(id)), nil, nil, &out)
}

// ErrRequestGone is returned by WaitGrant when the request left the
// pending list without a grant (it expired or was withdrawn).
var ErrRequestGone = errors.New("request is no longer pending and was not granted")

// WaitGrant polls request id every poll interval until it is granted, the
// request is gone (ErrRequestGone) or ctx ends.
func (c *Client) WaitGrant(ctx context.Context, name string, id int, poll time.Duration) (*Grant, error) {
	if poll <= 0 {
		poll = 100 * time.Millisecond
	}
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		st, err := c.RequestStatus(ctx, name, id)
		switch {
		case errors.Is(err, ErrNotFound):
			return nil, fmt.Errorf("request %d: %w", id, ErrRequestGone)
		case err != nil:
			return nil, err
		case st.State == StateGranted && st.Grant != nil:
			return st.Grant, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for request %d: %w", id, ctx.Err())
		case <-t.C:
		}
	}
}

// Leases reads the campaign's leases and pending requests.
func (c *Client) Leases(ctx context.Context, name string) (*Leases, error) {
	var out Leases
	return &out, c.do(ctx, http.MethodGet, campaignPath(name, "leases"), nil, nil, &out)
}

// ReleaseAll releases every lease of the campaign and drops its pending
// requests; with a class ("" for all), only those of that class.
func (c *Client) ReleaseAll(ctx context.Context, name, class string) (*ReleaseResult, error) {
	var q url.Values
	if class != "" {
		q = url.Values{"class": {class}}
	}
	var out ReleaseResult
	return &out, c.do(ctx, http.MethodDelete, campaignPath(name, "leases"), q, nil, &out)
}

// ReleaseLease releases one lease.
func (c *Client) ReleaseLease(ctx context.Context, name string, lease int) (*ReleaseResult, error) {
	var out ReleaseResult
	return &out, c.do(ctx, http.MethodDelete, campaignPath(name, "leases", strconv.Itoa(lease)), nil, nil, &out)
}

// Consume asks to use io GB of filesystem bandwidth and inference tokens in
// the current broker second; the answer says how much is allowed.
func (c *Client) Consume(ctx context.Context, name string, io, inference float64) (*ConsumeResult, error) {
	var out ConsumeResult
	return &out, c.do(ctx, http.MethodPost, campaignPath(name, "consume"), nil, ConsumeRequest{IO: io, Inference: inference}, &out)
}

// Page selects records by sequence number: with After < 0, the last Limit
// records; otherwise up to Limit records with seq > After, oldest first.
// Limit 0 means the server's default.
type Page struct {
	After int64
	Limit int
}

// Tail is the page of the latest records.
var Tail = Page{After: -1}

func (p Page) values() url.Values {
	q := url.Values{}
	if p.After >= 0 {
		q.Set("after", strconv.FormatInt(p.After, 10))
	}
	if p.Limit > 0 {
		q.Set("limit", strconv.Itoa(p.Limit))
	}
	return q
}

// Grants reads a page of the campaign's grants.
func (c *Client) Grants(ctx context.Context, name string, p Page) (*Grants, error) {
	var out Grants
	return &out, c.do(ctx, http.MethodGet, campaignPath(name, "grants"), p.values(), nil, &out)
}

// Journal reads a page of the broker journal. An administrator reads every
// record, or one campaign's with campaign set; a campaign token reads its
// own records only (campaign "" or its own name).
func (c *Client) Journal(ctx context.Context, campaign string, p Page) (*Journal, error) {
	q := p.values()
	if campaign != "" {
		q.Set("campaign", campaign)
	}
	var out Journal
	return &out, c.do(ctx, http.MethodGet, "/v1/journal", q, nil, &out)
}
