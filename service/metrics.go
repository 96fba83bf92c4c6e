package service

import (
	"fmt"
	"net/http"
)

// metrics serves the service's own health in the Prometheus text format:
// the clock (is it keeping up with --speed?) and the connections (how
// close to the cap, how many were shed). It names no campaign and needs no
// token, like /healthz.
func (s *Service) metrics(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	m := func(name, typ, help string, v any) {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n%s %v\n", name, help, name, typ, name, v)
	}
	m("bursar_broker_time_seconds", "gauge", "Broker time of the latest durable tick.", s.durableT.Load())
	m("bursar_clock_speed", "gauge", "Broker seconds per wall-clock second asked for (--speed).", s.opts.Speed)
	m("bursar_clock_achieved_speed", "gauge", "Broker seconds per wall-clock second achieved over the last window.", s.clock.rate())
	m("bursar_clock_behind_windows_total", "counter", "Windows in which the clock achieved less than 90% of --speed.", s.clock.behindWindows.Load())
	m("bursar_snapshots_total", "counter", "Snapshots written since start.", s.snapshots.Load())
	m("bursar_connections_open", "gauge", "Open client connections.", s.conns.open.Load())
	m("bursar_connections_limit", "gauge", "Connection cap (--max-conns, lowered to fit ulimit -n).", s.conns.limit.Load())
	m("bursar_connections_shed_idle_total", "counter", "Idle connections closed to make room at the cap.", s.conns.shedIdle.Load())
	m("bursar_connections_refused_total", "counter", "New connections closed at the cap because every other one was a busy trusted one.", s.conns.shedNew.Load())
	m("bursar_connections_strangers", "gauge", "Open connections on which no request has authenticated.", s.conns.strangers.Load())
	m("bursar_connections_shed_busy_total", "counter", "Connections without an authenticated request closed with a request in flight, to keep strangers within their share of the cap.", s.conns.shedBusy.Load())
	m("bursar_waits_open", "gauge", "Long polls of campaign tokens open (booked on the wait board).", s.waits.open.Load())
	m("bursar_waits_ended_early_total", "counter", "Long polls answered before their time to make room (a newer wait on the same request, or a campaign's share).", s.waits.kicked.Load())
	m("bursar_connections_reclaimed_total", "counter", "New connections let in at the cap by ending a long poll and closing its connection after the answer.", s.conns.reclaimed.Load())
	m("bursar_requests_in_flight_campaigns", "gauge", "Campaign tokens' authenticated requests in flight, long polls on the wait board aside.", s.inflight.campaignsInFlight())
	m("bursar_requests_in_flight_admin", "gauge", "Administrator requests in flight.", s.inflight.admin.Load())
	m("bursar_requests_refused_in_flight_total", "counter", "Campaign requests answered 429 because the campaign or the campaigns together had too many in flight.", s.inflight.refused.Load())
	m("bursar_memory_released_total", "counter", "Times freed memory was returned to the OS after a connection flood ended.", s.conns.released.Load())
}
