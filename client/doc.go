// Package client is a typed Go client of the Bursar service (`bursar
// serve`): the REST API through which agent campaigns negotiate GPU leases
// with the broker.
//
// A Client carries one bearer token. An administrator's client registers
// campaigns and receives each campaign's token exactly once; WithToken turns
// it into that campaign's client:
//
//	admin, _ := client.New("http://127.0.0.1:8642", adminToken)
//	reg, _ := admin.Register(ctx, client.CampaignSpec{Name: "sci", ...})
//	sci := admin.WithToken(reg.Token)
//	acc, _ := sci.Request(ctx, "sci", client.LeaseRequest{GPUs: 64, Duration: 600})
//	g, _ := sci.WaitGrant(ctx, "sci", acc.RequestID, 100*time.Millisecond)
//
// AwaitGrant does what WaitGrant does with a long poll instead, learning of
// the grant as soon as the tick that made it is durable; WithdrawRequest
// takes back a request an agent no longer waits for (requests.go).
//
// Request and lease ids are the campaign's own: its n-th request is id n
// (a lease has its request's id), whatever other campaigns file, and the
// same id means the same request whether the campaign's client or the
// administrator's passes it. Only the administrator's whole journal
// (Journal with campaign "") carries the broker's global ids.
//
// Every non-2xx answer is an *Error holding the RFC 9457 problem body; the
// statuses an agent reacts to match sentinels with errors.Is
// (ErrBudgetExhausted, ErrForbidden, ...).
//
// The wire types are those of package api, the contract the service imports
// too (types.go aliases them): the server generates its OpenAPI document
// and its input validation from the same structs, so the client cannot
// drift from the API it talks to.
package client
