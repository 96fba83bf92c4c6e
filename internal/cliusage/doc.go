// Package cliusage gives the command-line programs (bursar-sweep, bursar)
// the same manners on a usage error: a mistyped command or flag is named
// with the nearest real one (edit distance), a bad
// value names the flag and what it accepts, and neither dumps the full
// help; the error says which --help to read instead.
//
// It owns only the wording of usage errors; what a flag accepts beyond its
// type (a range, a list of formats) is checked by the command itself, in
// an error that also names the flag.
package cliusage
