package sweep

import (
	"bytes"
	"io"
	"path/filepath"
	"strconv"
	"time"

	"github.com/bursar-hpc/bursar/figures"
	"github.com/bursar-hpc/bursar/internal/atomicfile"
	"github.com/bursar-hpc/bursar/internal/manifest"
	"github.com/bursar-hpc/bursar/policy/registry"
)

// Flags are the flags given on a study's command line, by name, each as
// its parser read it (fmt's %v of the value): what a study's setup
// (FromConfig) lays over its config. A flag not given is absent, and its
// default is the study's.
type Flags map[string]string

// Has reports whether the flag was given.
func (f Flags) Has(name string) bool {
	_, ok := f[name]
	return ok
}

// Int is the integer flag's value, or def when it was not given.
func (f Flags) Int(name string, def int) int {
	if v, ok := f[name]; ok {
		if n, err := strconv.Atoi(v); err == nil {
			return n
		}
	}
	return def
}

// Float is the float flag's value, or def when it was not given.
func (f Flags) Float(name string, def float64) float64 {
	if v, ok := f[name]; ok {
		if x, err := strconv.ParseFloat(v, 64); err == nil {
			return x
		}
	}
	return def
}

// Bool is the boolean flag's value (false when not given).
func (f Flags) Bool(name string) bool { return f[name] == "true" }

// Env is what a study's report takes from the command that runs it.
type Env struct {
	Stdout, Stderr io.Writer
	Format         figures.Format
	Start          time.Time
	// Manifest starts the manifest of the study's output folder.
	Manifest func() *manifest.Manifest
	// Policies is the registry the study finds its policies in (nil:
	// policies.Default): the command line's (a test's own policy).
	Policies *registry.Registry
}

// TableFile is a study's printed table, kept in its folder.
const TableFile = "table.txt"

// PrintTableFile prints the table print draws to stdout and writes the
// same bytes, atomically, to the folder's table.txt.
func PrintTableFile(stdout io.Writer, out string, print func(io.Writer) error) error {
	var table bytes.Buffer
	if err := print(&table); err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(out, TableFile), table.Bytes()); err != nil {
		return err
	}
	_, err := stdout.Write(table.Bytes())
	return err
}
