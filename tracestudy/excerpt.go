package tracestudy

import (
	"bytes"
	_ "embed"

	"github.com/bursar-hpc/bursar/swf"
	"github.com/bursar-hpc/bursar/trace"
)

// ExcerptName is the name of the embedded default trace: a gzipped,
// byte-identical copy of testdata/traces/SDSC-SP2-1998-4.2-cln.days252-280.swf
// (a test checks that the two agree).
const ExcerptName = "SDSC-SP2-1998-4.2-cln.days252-280.swf"

//go:embed excerpt.swf.gz
var excerptGz []byte

// Load reads the trace at path (plain or gzip), or the embedded excerpt
// when path is empty.
func Load(path string, opt trace.Options) (*trace.Workload, error) {
	if path != "" {
		return trace.Load(path, opt)
	}
	r, err := swf.NewReader(bytes.NewReader(excerptGz), ExcerptName+" (embedded)")
	if err != nil {
		return nil, err
	}
	return trace.Read(r, opt)
}

// ExcerptGz is the embedded excerpt as stored (gzip), for manifests.
func ExcerptGz() []byte { return excerptGz }
