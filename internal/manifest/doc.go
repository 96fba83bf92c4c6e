// Package manifest writes manifest.json, the record that lets a reader of
// an output folder trust it: which program made it (module version and VCS
// revision from runtime/debug.ReadBuildInfo, Go version), how it was asked
// (the command line, less the flags LeaveOut drops: a cache folder names a
// place on one machine and changes no number), from what (each effective input, a scenario, an
// experiment config or a trace, named by path, size and SHA-256 and never
// copied in; the seeds and the worker count), when (start time) and how
// long it took (wall time), and the SHA-256 of every file it wrote beside
// the manifest. Its VersionLine is what both binaries print for --version.
//
// It owns nothing of a run: the commands of cmd/bursar-sweep fill a
// Manifest after their outputs are written and call Write, which writes
// atomically (internal/atomicfile). The times are the only wall-clock
// values in an output folder; no run reads them, so determinism (same seed,
// same numbers) is untouched. The format is documented in docs/metrics.md
// (section manifest.json).
package manifest
