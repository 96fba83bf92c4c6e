package tracestudy

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/bursar-hpc/bursar/figures"
	"github.com/bursar-hpc/bursar/trace"
)

const excerptPath = "../testdata/traces/SDSC-SP2-1998-4.2-cln.days252-280.swf"

// The embedded default trace is the committed excerpt, byte for byte.
func TestEmbeddedExcerptIsTheCommittedOne(t *testing.T) {
	want, err := os.ReadFile(excerptPath)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(ExcerptGz()))
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("tracestudy/excerpt.swf.gz is not testdata/traces' excerpt: regenerate it with gzip -9 -n")
	}
	w, err := Load("", trace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Jobs) != 2661 || w.Pool != 128 {
		t.Fatalf("embedded excerpt: %d jobs, pool %d", len(w.Jobs), w.Pool)
	}
}

// The outputs are the same whatever the worker count.
func TestOutputsIndependentOfWorkers(t *testing.T) {
	w, err := Load("", trace.Options{Until: 22_000_000})
	if err != nil {
		t.Fatal(err)
	}
	specs := append(TraceSpecs([]string{"fifo", "static", "quota", "priority"}), bkSpecs(t, []int{1, 7}, []int{0, 3600})...)
	var sums [2][]byte
	for i, workers := range []int{1, 3} {
		rs, err := Execute(context.Background(), w, specs, workers, nil)
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		st, err := WholeStudy(w, specs)
		if err != nil {
			t.Fatal(err)
		}
		files, err := Write(dir, Summary{Experiment: "trace", Trace: Info(w, "x", 0, 0), Study: st, Runs: rs}, figures.SVG)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			b, err := os.ReadFile(filepath.Join(dir, f))
			if err != nil {
				t.Fatal(err)
			}
			sums[i] = append(sums[i], b...)
		}
	}
	if !bytes.Equal(sums[0], sums[1]) {
		t.Fatal("outputs differ between 1 and 3 workers")
	}
}

func TestExecuteRefusesNoWorkers(t *testing.T) {
	if _, err := Execute(context.Background(), nil, nil, 0, nil); err == nil {
		t.Fatal("0 workers accepted")
	}
}

func TestCancelledContextStops(t *testing.T) {
	w, err := Load("", trace.Options{Until: 22_000_000})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Execute(ctx, w, TraceSpecs([]string{"fifo"}), 1, nil); err == nil {
		t.Fatal("a cancelled run returned no error")
	}
}
