package manifest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/bursar-hpc/bursar/internal/atomicfile"
)

// File is the manifest's name in every output folder.
const File = "manifest.json"

// Program identifies the binary that wrote a folder.
type Program struct {
	Name string `json:"name"`
	// Module and Version are the main module's path and version as the
	// build recorded them ("(devel)" for a build from a source tree).
	Module  string `json:"module"`
	Version string `json:"version"`
	// VCSRevision, VCSTime and VCSModified are the vcs.* build settings:
	// empty when the binary was built without VCS information (go run of
	// a file list, -buildvcs=false, a test binary).
	VCSRevision string `json:"vcs_revision"`
	VCSTime     string `json:"vcs_time"`
	VCSModified bool   `json:"vcs_modified"`
	GoVersion   string `json:"go_version"`
}

// Input is one effective input of the command: a scenario, an experiment
// config or a trace. A file is named by its path, size and SHA-256, never
// copied in (a full workload log is megabytes); only the run's effective
// scenario, which is no file but the knob flags applied to the default,
// carries its text.
type Input struct {
	// Kind says what the input is: "scenario", "config", "trace", or a
	// site's configuration file ("slurm-conf", "kueue").
	Kind string `json:"kind"`
	// Name is where it came from: a path, or the embedded file's name.
	Name string `json:"name"`
	// Embedded is true when the input is the one built into the binary.
	Embedded bool `json:"embedded"`
	// Bytes is the input's size.
	Bytes int64 `json:"bytes"`
	// SHA256 is the hex SHA-256 of the input's bytes.
	SHA256 string `json:"sha256"`
	// Content is the effective scenario's text (JSON), for a run only.
	Content string `json:"content,omitempty"`
	// Configures says what a site's configuration file set (trace
	// --slurm-conf, --kueue; docs/site-config.md): the policy and its
	// knobs, the pool. Ignored are the keys it did not read, each
	// "FILE:LINE: key (why)".
	Configures string   `json:"configures,omitempty"`
	Ignored    []string `json:"ignored,omitempty"`
}

// NewInput names an input file by its size and digest.
func NewInput(kind, name string, embedded bool, content []byte) Input {
	return NewStoredInput(kind, name, embedded, int64(len(content)), sha256.Sum256(content))
}

// NewStoredInput names an input file by its size and SHA-256 taken
// elsewhere (a large trace streamed through the hash, never held whole).
func NewStoredInput(kind, name string, embedded bool, bytes int64, sum [sha256.Size]byte) Input {
	return Input{Kind: kind, Name: name, Embedded: embedded, Bytes: bytes, SHA256: hex.EncodeToString(sum[:])}
}

// NewInlineInput is an input that exists in no file, such as a run's
// effective scenario: its text is kept, since nothing else holds it.
func NewInlineInput(kind, name string, embedded bool, content []byte) Input {
	in := NewInput(kind, name, embedded, content)
	in.Content = string(content)
	return in
}

// Output is one file the command wrote into the folder.
type Output struct {
	Name   string `json:"name"`
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
}

// Manifest is the content of manifest.json.
type Manifest struct {
	Program     Program  `json:"program"`
	CommandLine []string `json:"command_line"`
	// Command is the subcommand (run, paper, sweep, …).
	Command string  `json:"command"`
	Inputs  []Input `json:"inputs"`
	// Quick is true for a --quick run of an experiment.
	Quick   bool    `json:"quick"`
	Seeds   []int64 `json:"seeds"`
	Workers int     `json:"workers"`
	// Start is the wall-clock start in UTC (RFC 3339, nanoseconds) and
	// WallSeconds the elapsed time until the last output was written.
	Start       string   `json:"start"`
	WallSeconds float64  `json:"wall_seconds"`
	Outputs     []Output `json:"outputs"`
	// Warnings are what the command found degenerate in its input (a
	// campaign whose requests cannot fit the pool, an envelope that
	// contradicts itself: engine.Scenario.Warnings); none in a sound run.
	Warnings []string `json:"warnings,omitempty"`
	// Stale are the files of the folder that this command did not write
	// (an earlier run's figure in another format, a study's file this
	// one does not make): they are not vouched for and may disagree with
	// the outputs. Hidden files and shard files (a merge's inputs) are
	// left out.
	Stale []string `json:"stale,omitempty"`
}

// Digest is the hex SHA-256 of b.
func Digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Revision, RevisionTime and RevisionModified are the fallback for a build
// without VCS information (GOFLAGS=-buildvcs=false is common in CI images):
// `make build` sets them from git with -ldflags -X, and ReadProgram uses
// them only when the build information has no vcs.revision.
var (
	Revision         string
	RevisionTime     string
	RevisionModified string
)

// ReadProgram reads the program's identity from the build information.
func ReadProgram(name string) Program {
	p := Program{Name: name, GoVersion: runtime.Version()}
	if info, ok := debug.ReadBuildInfo(); ok {
		p.Module, p.Version = info.Main.Path, info.Main.Version
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				p.VCSRevision = s.Value
			case "vcs.time":
				p.VCSTime = s.Value
			case "vcs.modified":
				p.VCSModified = s.Value == "true"
			}
		}
	}
	if p.VCSRevision == "" && Revision != "" {
		p.VCSRevision, p.VCSTime, p.VCSModified = Revision, RevisionTime, RevisionModified == "true"
	}
	return p
}

// VersionLine is what `--version` prints after the program's name: the
// module version, the VCS revision (with "+modified" for a dirty tree, or
// a hint when the build recorded none) and the Go toolchain.
func VersionLine(name string) string {
	p := ReadProgram(name)
	version := p.Version
	if version == "" {
		version = "(unknown)"
	}
	rev := "no VCS revision (build with `make build`, which stamps it)"
	if p.VCSRevision != "" {
		rev = "revision " + p.VCSRevision
		if p.VCSModified {
			rev += "+modified"
		}
		if p.VCSTime != "" {
			rev += " of " + p.VCSTime
		}
	}
	return fmt.Sprintf("%s, %s, %s", version, rev, p.GoVersion)
}

// New starts a manifest for program name run with args (os.Args) at start.
func New(name string, args []string, command string, start time.Time) *Manifest {
	return &Manifest{
		Program:     ReadProgram(name),
		CommandLine: slices.Clone(args),
		Command:     command,
		Start:       start.UTC().Format(time.RFC3339Nano),
		Inputs:      []Input{},
		Seeds:       []int64{},
		Outputs:     []Output{},
	}
}

// LeaveOut drops the named flags and their values from the command line
// (--name VALUE, --name=VALUE and the one-dash forms; an argument after a
// "--" that ends the flags is kept): for a flag that names a place on the
// machine that ran the command and never changes a number, noise in a
// record meant for reproducing the folder.
func (m *Manifest) LeaveOut(flags ...string) {
	out := m.CommandLine[:0:0]
	for i := 0; i < len(m.CommandLine); i++ {
		a := m.CommandLine[i]
		if a == "--" {
			out = append(out, m.CommandLine[i:]...)
			break
		}
		name, eq := strings.TrimLeft(a, "-"), false
		if n, _, ok := strings.Cut(name, "="); ok {
			name, eq = n, true
		}
		if len(a) > 1 && a[0] == '-' && slices.Contains(flags, name) {
			if !eq {
				i++ // the value
			}
			continue
		}
		out = append(out, a)
	}
	m.CommandLine = out
}

// Write records the listed files of dir (their size and SHA-256, in the
// order given), sets the wall time from start to now, and writes
// dir/manifest.json atomically. A listed file that does not exist is an
// error: the manifest vouches only for what is there.
func (m *Manifest) Write(dir string, start time.Time, files []string) error {
	m.Outputs = m.Outputs[:0]
	for _, name := range files {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return fmt.Errorf("manifest: %w", err)
		}
		m.Outputs = append(m.Outputs, Output{Name: name, Bytes: int64(len(b)), SHA256: Digest(b)})
	}
	m.Stale = staleFiles(dir, files)
	m.WallSeconds = time.Since(start).Seconds()
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("manifest: %w", err)
	}
	return atomicfile.Write(filepath.Join(dir, File), append(b, '\n'))
}

// staleFiles are the regular files of dir that are not in files, not
// the manifest and neither hidden (a lock, an atomic write's temporary
// file) nor shard files (a merge's inputs), sorted by name.
func staleFiles(dir string, files []string) []string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var stale []string
	for _, e := range ents {
		name := e.Name()
		if !e.Type().IsRegular() || name == File || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "shard-") || slices.Contains(files, name) {
			continue
		}
		stale = append(stale, name)
	}
	return stale
}
