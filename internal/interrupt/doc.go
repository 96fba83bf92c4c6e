// Package interrupt owns how the commands stop on Ctrl-C (SIGINT) or
// SIGTERM: Context cancels a command's work when one arrives and
// remembers it, and Status turns the command's failure into the exit
// status a shell expects of an interrupted program, 128 plus the
// signal's number (130 for Ctrl-C, 143 for SIGTERM), instead of 1. A
// script can then tell "interrupted" from "failed" (README.md, "Ctrl-C
// stops within one run and writes nothing"; docs/cluster.md, Ctrl-C
// with --cache).
package interrupt
