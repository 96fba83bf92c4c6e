// Package figures draws the paper's three figures with gonum/plot from
// already-reduced sweep data: fig_latency_price, fig_overbooking and
// fig_bucket (shared/spec/experiments.md). It computes nothing of the
// experiments itself.
package figures
