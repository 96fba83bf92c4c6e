// Package demo is the agent of `bursar demo` (docs/service.md): one
// campaign that negotiates the full loop with a Bursar service through
// package client (register, read its supply, request and wait for the
// grant, meter io and inference within and beyond its envelope, meet the
// rate cap, release, read its grants and journal), checking at every step
// what the broker's rules promise. Selftest plays it against a private
// in-process service and also checks the token boundaries and a restart
// from the journal file. cmd/bursar reads the flags and calls Run or
// Selftest.
package demo
