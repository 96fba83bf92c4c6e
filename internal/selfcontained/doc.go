// Package selfcontained holds one test: that the repository stands alone.
// A clone from a public host has no workplace folder beside it, so no file
// outside testdata/ may point at one (docs/studies.md is the project's own
// copy of the study rules; docs/traces.md says where to download the full
// logs). The package has no code; it exists so that `go test ./...` runs
// the check.
package selfcontained
