package pollcrowd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bursar-hpc/bursar/api"
	"github.com/bursar-hpc/bursar/client"
)

// Tally counts what a crowd of long polls was answered: at their end, early
// (the service made room), 429, anything else, and connections lost
// between polls (shed while idle, or closed after a reclaimed wait).
type Tally struct{ OK, Early, TooMany, Other, Conn atomic.Int64 }

func (t *Tally) String() string {
	return fmt.Sprintf("%d at their end, %d early (made room), %d 429, %d other; %d connections lost between polls",
		t.OK.Load(), t.Early.Load(), t.TooMany.Load(), t.Other.Load(), t.Conn.Load())
}

// Poll re-sends one long poll on request req of campaign on its own
// connection as soon as it is answered, until stop.
func Poll(url, token, campaign string, req int, stop <-chan struct{}, tally *Tally) {
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}, Timeout: 30 * time.Second}
	defer hc.CloseIdleConnections()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-stop
		cancel() // ends the poll in flight too
	}()
	target := fmt.Sprintf("%s/v1/campaigns/%s/requests/%d/wait?wait=20s", url, campaign, req)
	for {
		select {
		case <-stop:
			return
		default:
		}
		r, _ := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
		r.Header.Set("Authorization", "Bearer "+token)
		resp, err := hc.Do(r)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			tally.Conn.Add(1)
			continue
		}
		var w api.RequestWait
		err = json.NewDecoder(resp.Body).Decode(&w)
		resp.Body.Close()
		switch {
		case resp.StatusCode == http.StatusOK && err == nil && w.EndedEarly:
			tally.Early.Add(1)
		case resp.StatusCode == http.StatusOK && err == nil:
			tally.OK.Add(1)
		case resp.StatusCode == http.StatusTooManyRequests:
			tally.TooMany.Add(1)
		default:
			tally.Other.Add(1)
		}
	}
}

// Served makes n GET requests of path with token, one after the other
// (each on a new connection when hc keeps none alive), and returns how
// many were answered 200 and why the others were not.
func Served(hc *http.Client, url, path, token string, n int) (served int, failures []string) {
	for range n {
		r, err := http.NewRequest(http.MethodGet, url+path, nil)
		if err != nil {
			return served, append(failures, err.Error())
		}
		r.Header.Set("Authorization", "Bearer "+token)
		resp, err := hc.Do(r)
		if err != nil {
			failures = append(failures, err.Error())
			continue
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			served++
		} else {
			failures = append(failures, resp.Status)
		}
	}
	return served, failures
}

// Tenant is a campaign whose pending requests the crowd polls.
type Tenant struct {
	Name, Token string
	Requests    []int
}

// NewTenant registers spec through the administrator's client and files
// pending requests req for it, all left pending by the caller's clock.
func NewTenant(ctx context.Context, admin *client.Client, spec client.CampaignSpec, pending int, req client.LeaseRequest) (Tenant, error) {
	reg, err := admin.Register(ctx, spec)
	if err != nil {
		return Tenant{}, err
	}
	c := admin.WithToken(reg.Token)
	tn := Tenant{Name: spec.Name, Token: reg.Token}
	for range pending {
		acc, err := c.Request(ctx, spec.Name, req)
		if err != nil {
			return tn, err
		}
		tn.Requests = append(tn.Requests, acc.RequestID)
	}
	return tn, nil
}

// Start sets perRequest pollers on each pending request of each tenant;
// stop ends them and waits until they have.
func Start(url string, tenants []Tenant, perRequest int) (tally *Tally, stop func()) {
	tally = &Tally{}
	done := make(chan struct{})
	var wg sync.WaitGroup
	for _, tn := range tenants {
		for _, req := range tn.Requests {
			for range perRequest {
				wg.Go(func() { Poll(url, tn.Token, tn.Name, req, done, tally) })
			}
		}
	}
	return tally, func() { close(done); wg.Wait() }
}

// FreshClient makes every request on a new connection, as an operator
// arriving during a flood does.
func FreshClient() *http.Client {
	return &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}
}

// SocketClient is FreshClient over the Unix socket at path (any URL's
// host reaches it).
func SocketClient(path string) *http.Client {
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", path)
		}}}
}
