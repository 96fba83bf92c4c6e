package tracestudy

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bursar-hpc/bursar/figures"
	"github.com/bursar-hpc/bursar/trace"
)

// TestCodecRoundTripIsExact: every result, through the codec that shard
// files and cache entries use, writes the same summary.json, runs.csv and
// figure as the computed one; NaN (a class that ran no job) survives.
func TestCodecRoundTripIsExact(t *testing.T) {
	w, err := Load("", trace.Options{From: 21_772_800, Until: 21_900_000})
	if err != nil {
		t.Fatal(err)
	}
	specs := append(TraceSpecs([]string{"fifo", "static", "bursar"}), bkSpecs(t, []int{1}, []int{300})...)
	rs, err := Execute(context.Background(), w, specs, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	nan := false
	back := make([]Result, len(rs))
	for i := range rs {
		b, err := Codec.Encode(&rs[i])
		if err != nil {
			t.Fatal(err)
		}
		if back[i], err = Codec.Decode(b); err != nil {
			t.Fatal(err)
		}
		again, _ := Codec.Encode(&back[i])
		if !bytes.Equal(b, again) {
			t.Fatalf("run %d: encoding is not stable:\n%s\n%s", i, b, again)
		}
		for _, s := range rs[i].Summary.ByClass {
			nan = nan || math.IsNaN(s.MeanWait)
		}
	}
	if !nan {
		t.Fatal("no class without jobs: the NaN path is not exercised; widen the specs")
	}
	st, err := WholeStudy(w, specs)
	if err != nil {
		t.Fatal(err)
	}
	for _, exp := range []string{"trace", "budget-knobs"} {
		a, b := t.TempDir(), t.TempDir()
		files, err := Write(a, Summary{Experiment: exp, Trace: Info(w, "x", 0, 0), Study: st, Runs: rs}, figures.SVG)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Write(b, Summary{Experiment: exp, Trace: Info(w, "x", 0, 0), Study: st, Runs: back}, figures.SVG); err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			x, _ := os.ReadFile(filepath.Join(a, f))
			y, _ := os.ReadFile(filepath.Join(b, f))
			if !bytes.Equal(x, y) {
				t.Fatalf("%s %s differs after the codec", exp, f)
			}
		}
	}
}

// The plan's inputs name every knob and the trace's digest; runs with the
// same inputs share a key, other inputs do not.
func TestPlanInputsAndCosts(t *testing.T) {
	w, err := Load("", trace.Options{Until: 21_800_000})
	if err != nil {
		t.Fatal(err)
	}
	shared := SharedInputs(Digest(ExcerptGz()), trace.Options{Until: 21_800_000}, w)
	study := func(specs []Spec) *Study {
		st, err := WholeStudy(w, specs)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	a := NewPlan("trace", shared, study(TraceSpecs([]string{"fifo", "budget"})))
	b := NewPlan("trace", shared, study(TraceSpecs([]string{"budget"})))
	if a.RunKey(1) != b.RunKey(0) {
		t.Fatal("the same run in two plans has two keys")
	}
	c := NewPlan("trace", SharedInputs(Digest(ExcerptGz()), trace.Options{Until: 21_800_001}, w), study(TraceSpecs([]string{"budget"})))
	if c.RunKey(0) == b.RunKey(0) {
		t.Fatal("another window, the same key")
	}
	k := bkSpecs(t, []int{1, 3}, []int{0})
	d := NewPlan("budget-knobs", shared, study(k))
	if d.RunKey(0) == d.RunKey(1) || !strings.HasPrefix(d.Runs[0].Label, "budget W=1d m=0s checkpoint:3600 w0 days") {
		t.Fatalf("budget-knobs runs: %q %q", d.RunKey(0), d.Runs[0].Label)
	}
	if a.Runs[1].Cost <= a.Runs[0].Cost {
		t.Fatal("budget costs no more than fifo")
	}
}

// bkSpecs is BudgetKnobSpecs with the default restart, or the restarts
// given.
func bkSpecs(t testing.TB, windows, mins []int, restarts ...string) []Spec {
	t.Helper()
	if restarts == nil {
		restarts = BudgetRestarts[:1]
	}
	specs, err := BudgetKnobSpecs(windows, mins, restarts)
	if err != nil {
		t.Fatal(err)
	}
	return specs
}
