package tracestudy

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/bursar-hpc/bursar/configs"
	"github.com/bursar-hpc/bursar/internal/cliusage"
	"github.com/bursar-hpc/bursar/swf"
	"github.com/bursar-hpc/bursar/trace"
)

// ExcerptName is the name of the embedded default trace: a gzipped,
// byte-identical copy of testdata/traces/SDSC-SP2-1998-4.2-cln.days252-280.swf
// (a test checks that the two agree).
const ExcerptName = "SDSC-SP2-1998-4.2-cln.days252-280.swf"

// FullSDSCName is the archive name of the embedded full SDSC-SP2 log: the
// Parallel Workloads Archive's cleaned log, byte for byte as the archive
// serves it (gzip), header and its terms intact (testdata/traces/README.md).
const FullSDSCName = "SDSC-SP2-1998-4.2-cln.swf.gz"

// The names --trace accepts for the embedded logs, in place of a file.
const (
	// BuiltinFull names the embedded full SDSC-SP2 log (59,715 records,
	// 729 days, 128 processors): agents-arrive's default.
	BuiltinFull = "sdsc-sp2"
	// BuiltinExcerpt names the embedded 28-day excerpt: the default of
	// trace and budget-knobs.
	BuiltinExcerpt = "sdsc-sp2-excerpt"
)

//go:embed excerpt.swf.gz
var excerptGz []byte

//go:embed sdsc-sp2.swf.gz
var fullGz []byte

// Builtin is the embedded log that name stands for ("" is the excerpt):
// its bytes as stored (gzip) and the name outputs give it. ok is false
// when name is a file path, not a built-in name.
func Builtin(name string) (gz []byte, archiveName string, ok bool) {
	switch name {
	case "", BuiltinExcerpt:
		return excerptGz, ExcerptName, true
	case BuiltinFull:
		return fullGz, FullSDSCName, true
	}
	return nil, "", false
}

// Stored is a log's size and SHA-256 as stored (a built-in log's gzip
// bytes, else the file's bytes): what a plan's inputs and a manifest name
// it by.
type Stored struct {
	Bytes  int64
	SHA256 [sha256.Size]byte
}

// Fingerprint is the Stored size and digest of the log that path names,
// the file streamed through the hash: a study keeps these 40 bytes, not
// the file (21 MB for a plain 300k-job log, held for the whole study
// until the manifest was written; docs/traces.md).
func Fingerprint(path string) (Stored, error) {
	if gz, _, ok := Builtin(path); ok {
		return Stored{Bytes: int64(len(gz)), SHA256: sha256.Sum256(gz)}, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return Stored{}, suggestBuiltin(path, err)
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return Stored{}, err
	}
	s := Stored{Bytes: n}
	h.Sum(s.SHA256[:0])
	return s, nil
}

// Digest is the log's digest as a plan's inputs give it (the package
// function Digest of its content).
func (s Stored) Digest() string { return digestText(s.SHA256) }

// suggestBuiltin adds to a missing file's error the built-in log whose
// name path is a typo of (sdsc-sp3 for sdsc-sp2): a user who types a
// built-in name wrongly gets a file error that would not say so.
func suggestBuiltin(path string, err error) error {
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if hint := cliusage.DidYouMean(path, configs.BuiltinTraces); hint != "" {
		return fmt.Errorf("%w%s (built-in logs: %s)", err, hint, strings.Join(configs.BuiltinTraces, ", "))
	}
	return err
}

// open is a reader of the log path names (a built-in name, "" for the
// excerpt, or a file, plain or gzip) and what to close when done.
func open(path string) (*swf.Reader, io.Closer, error) {
	if gz, name, ok := Builtin(path); ok {
		r, err := swf.NewReader(bytes.NewReader(gz), name+" (embedded)")
		if err != nil {
			return nil, nil, fmt.Errorf("the embedded %s: %w", name, err)
		}
		return r, io.NopCloser(nil), nil
	}
	r, c, err := swf.Open(path)
	return r, c, suggestBuiltin(path, err)
}

// Load reads the trace at path (plain or gzip), or the embedded log a
// built-in name stands for (BuiltinFull, BuiltinExcerpt; "" the excerpt).
func Load(path string, opt trace.Options) (*trace.Workload, error) {
	r, c, err := open(path)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return trace.Read(r, opt)
}

// ExcerptGz is the embedded excerpt as stored (gzip), for manifests.
func ExcerptGz() []byte { return excerptGz }
