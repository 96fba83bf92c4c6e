// Package service serves the Bursar broker (package policy) over HTTP in
// real time: the REST API through which agent campaigns negotiate GPU
// leases, as run by `bursar serve`.
//
// The broker is a deterministic, single-threaded state machine; the
// service puts one mutex around it and a ticker that advances it one broker
// second every 1/Speed wall-clock seconds. Handlers are huma operations on
// a Go 1.22 ServeMux (the OpenAPI 3.1 document at /openapi.json is generated
// from the api package's wire types, which are also what every request
// is validated against).
//
// Security: campaign tokens are 128 random bits, shown once at
// registration, stored as SHA-256 and compared in constant time; a token
// reaches its own campaign only (403 elsewhere, 401 without a valid one),
// the administrator token everything. Authentication runs before input
// validation.
//
// Durability: with a data directory every state-changing operation is
// appended to a checksummed write-ahead journal of operations (register
// with the token hash, request, release, release-lease, consume, tick)
// before its answer is sent, and group-committed with fsync; no answer,
// read or write, is sent before the journal covering the state it shows is
// on stable storage. Periodic snapshots (snapshot.go) are a dump of the
// state (dump.go: policy.Broker.Dump and the service's own), and the
// journal is truncated behind them, so that the data directory stays
// within a bound the caps set (diskbound.go, docs/service.md "Bounded
// disk"). On start the snapshot is loaded and the journal after it
// replayed, which rebuilds campaigns, tokens, credits, buckets, leases
// and the id counter exactly; a torn last record is cut and reported, a
// damaged complete one stops the start with the repair command
// (RepairJournal) unless RecoverTail.
//
// Exposure on a shared login node (issues 13 and 22): connections are
// capped to fit the descriptor limit, the longest-idle shed first, and
// connections on which no request has authenticated ("strangers") hold at
// most three quarters of the cap, busy or not (connlimit.go); every error
// is an RFC 9457 problem; every request body is read by one bounded,
// exact-case, duplicate-free JSON parser whose result both validation and
// the handler use (strict.go); campaign tokens' writes are rate-limited
// and consume calls bounded per tick (tenant.go); a campaign sees its
// own request and lease ids (its n-th request is n), never the broker's
// global ones, which would tell it how many requests others filed
// (ids.go); tokens can be rotated and revoked (token.go); the clock's
// speed is bounded and its lag logged and exported at /metrics (clock.go,
// metrics.go). Durability beyond the
// journal: the last two snapshots are kept with the segment between them,
// a missing or shortened journal is refused (the length mark, wal.go),
// the data directory must be trusted (owned by the server's user, not
// writable by others, nor any directory above it) and every file in it is
// reached through one os.Root, following no link (datadir.go),
// and repair.go rewrites a damaged header, rebuilds a damaged snapshot and
// cuts a damaged tail, each after a backup; inspect.go reads a data
// directory for `bursar journal inspect`. See docs/service.md for the
// exact guarantees.
//
// Waiting and withdrawing (issues 22 §5, 23 §5): GET …/requests/{id}/wait
// holds its answer until the durable tick that grants the request
// (wait.go); waits are booked by request, bounded per campaign and in all
// below the connection cap, and authenticated requests are counted per
// token so that the administrator keeps a share of the connections
// (waiters.go, issue 34). DELETE …/requests/{id} withdraws a pending request, a
// journaled "withdraw" operation (withdraw.go); `bursar lease` uses both.
// With Options.AdmitOnRequest an admission pass, a journaled "admit"
// operation, follows every request and release, so that a request the
// pool can take is granted in its own answer (admit.go).
package service
