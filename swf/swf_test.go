package swf

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const excerpt = "../testdata/traces/SDSC-SP2-1998-4.2-cln.days252-280.swf"

func readAll(t testing.TB, r *Reader) []Job {
	t.Helper()
	var jobs []Job
	for {
		j, err := r.Next()
		if err == io.EOF {
			return jobs
		}
		if err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, j)
	}
}

func TestExcerptHeaderAndRecords(t *testing.T) {
	r, c, err := Open(excerpt)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	h := r.Header()
	if h.Version != "2.2" || h.Computer != "IBM SP2" || h.Installation != "SDSC" {
		t.Errorf("identity: %q %q %q", h.Version, h.Computer, h.Installation)
	}
	if h.MaxProcs != 128 || h.MaxNodes != 128 || h.MaxQueues != 7 || h.MaxJobs != 73496 || h.MaxRecords != 59715 {
		t.Errorf("sizes: procs %d nodes %d queues %d jobs %d records %d", h.MaxProcs, h.MaxNodes, h.MaxQueues, h.MaxJobs, h.MaxRecords)
	}
	if h.UnixStartTime != 893466664 || !h.HasTimeZone || h.TimeZone != -28800 || h.TimeZoneString != "US/Pacific" {
		t.Errorf("time: %d %v %d %q", h.UnixStartTime, h.HasTimeZone, h.TimeZone, h.TimeZoneString)
	}
	if h.MaxRuntime != -1 || h.MaxPartitions != -1 {
		t.Errorf("absent keys must be -1: %d %d", h.MaxRuntime, h.MaxPartitions)
	}
	wantQ := []string{"interactive", "express", "high", "normal", "low", "standby", "No_Class"}
	if len(h.Queues) != len(wantQ) {
		t.Fatalf("queues %v", h.Queues)
	}
	for i, name := range wantQ {
		if h.Queues[i].Number != i || h.Queues[i].Name != name || h.QueueName(i) != name {
			t.Errorf("queue %d: %+v", i, h.Queues[i])
		}
	}
	if p, stated := h.Preemption(); p || !stated {
		t.Errorf("the excerpt's header says Preemption: No; read %v, stated %v", p, stated)
	}
	if v, ok := h.Field("timezonestring"); !ok || v != "US/Pacific" {
		t.Errorf("Field(timezonestring): %q %v", v, ok)
	}
	if len(h.Notes) != 2 || !strings.Contains(h.Notes[1], "EXCERPT") || !strings.Contains(h.Notes[0], "user=374") {
		t.Errorf("notes: %q", h.Notes)
	}
	for _, f := range h.Fields {
		if f.Key == "http" {
			t.Errorf("line %d: a URL taken for a key", f.Line)
		}
	}
	if len(h.Lines) != 54 || h.Lines[0] != "; Version: 2.2" || !strings.Contains(h.Lines[14], "copyright notice is preserved") {
		t.Errorf("header lines: %d, first %q", len(h.Lines), h.Lines[0])
	}
	jobs := readAll(t, r)
	if len(jobs) != 2837 {
		t.Fatalf("%d records, want 2837", len(jobs))
	}
	// The first record, field by field:
	// 37102 21773058 28 644 16 595.31 -1 16 36000 -1 1 13 12 3301 4 -1 -1 -1
	want := Job{37102, 21773058, 28, 644, 16, 595.31, -1, 16, 36000, -1, 1, 13, 12, 3301, 4, -1, -1, -1}
	if jobs[0] != want {
		t.Errorf("first record %+v\nwant %+v", jobs[0], want)
	}
	var skips Skips
	for i := range jobs {
		skips.Add(Check(&jobs[i], h.MaxProcs))
	}
	if skips.Total() != skips.NoRunTime || skips.NoRunTime == 0 {
		t.Errorf("skips %v", skips)
	}
	t.Logf("%v", skips)
}

func gz(t testing.TB, b []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write(b)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// The gzip form is detected by its magic bytes, whatever the name.
// Preemption: any stated value but No means the machine may preempt; no
// field, or an empty one, says nothing.
func TestPreemptionField(t *testing.T) {
	for _, c := range []struct {
		header           string
		preempted, state bool
	}{
		{"; Preemption: No\n", false, true},
		{"; Preemption:   no  \n", false, true},
		{"; Preemption: Yes\n", true, true},
		{"; Preemption: Double\n", true, true},
		{"; Preemption:\n", false, false},
		{"; MaxProcs: 4\n", false, false},
	} {
		r, err := NewReader(strings.NewReader(c.header), "h.swf")
		if err != nil {
			t.Fatal(err)
		}
		if p, st := r.Header().Preemption(); p != c.preempted || st != c.state {
			t.Errorf("%q: preempted %v stated %v", c.header, p, st)
		}
	}
}

func TestGzipSameAsPlain(t *testing.T) {
	raw, err := os.ReadFile(excerpt)
	if err != nil {
		t.Fatal(err)
	}
	a, err := NewReader(bytes.NewReader(raw), "plain.swf")
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewReader(bytes.NewReader(gz(t, raw)), "no-suffix")
	if err != nil {
		t.Fatal(err)
	}
	ja, jb := readAll(t, a), readAll(t, b)
	if len(ja) != len(jb) || len(ja) == 0 {
		t.Fatalf("%d vs %d records", len(ja), len(jb))
	}
	for i := range ja {
		if ja[i] != jb[i] {
			t.Fatalf("record %d differs", i)
		}
	}
	if len(a.Header().Lines) != len(b.Header().Lines) {
		t.Fatal("headers differ")
	}
}

func TestBadLinesNameFileLineField(t *testing.T) {
	good := "1 0 5 100 4 -1 -1 4 200 -1 1 1 1 -1 0 -1 -1 -1"
	cases := []struct {
		name, text, want string
	}{
		{"letters", "; MaxProcs: 8\n" + good + "\n2 10 x 100 4 -1 -1 4 200 -1 1 1 1 -1 0 -1 -1 -1\n", `t.swf:3: field 3 (wait time) "x"`},
		{"short", good + "\n\n3 10 5 100\n", "t.swf:3: field 5 (allocated processors): not valid SWF: missing"},
		{"long", good + " 7\n", "t.swf:1: record: not valid SWF: more than 18 fields"},
		{"float in int", "1 0 5 1.5 4 -1 -1 4 200 -1 1 1 1 -1 0 -1 -1 -1\n", `t.swf:1: field 4 (run time) "1.5"`},
		{"float field", "1 0 5 1 4 abc -1 4 200 -1 1 1 1 -1 0 -1 -1 -1\n", `t.swf:1: field 6 (average CPU time) "abc"`},
		{"overflow", "1 0 5 1 99999999999 -1 -1 4 200 -1 1 1 1 -1 0 -1 -1 -1\n", `field 5 (allocated processors) "99999999999": not valid SWF: out of range`},
		{"header", "; Version: 2.2\n; MaxProcs: many\n", `t.swf:2: header MaxProcs "many"`},
		{"negative submit", "1 -1 5 1 4 -1 -1 4 200 -1 1 1 1 -1 0 -1 -1 -1\n", "field 2 (submit time)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := NewReader(strings.NewReader(c.text), "t.swf")
			for err == nil {
				_, err = r.Next()
			}
			if err == io.EOF || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want it to contain %q", err, c.want)
			}
			var pe *ParseError
			if !errors.As(err, &pe) || !errors.Is(err, ErrSyntax) {
				t.Fatalf("not a ParseError wrapping ErrSyntax: %T", err)
			}
		})
	}
}

func TestMinusOneAndFallbacks(t *testing.T) {
	text := "5 7 -1 30 12 -1 -1 -1 -1 -1 1 2 3 -1 -1 -1 -1 -1\n" +
		"6 8 -1 30 -1 -1 -1 4 10 -1 1 2 3 -1 -1 -1 -1 -1\n" +
		"7 9 -1 -1 -1 -1 -1 4 10 -1 5 2 3 -1 -1 -1 -1 -1\n" +
		"8 9 -1 5 -1 -1 -1 -1 10 -1 0 2 3 -1 -1 -1 -1 -1\n" +
		"9 9 -1 5 300 -1 -1 -1 10 -1 0 2 3 -1 -1 -1 -1 -1\n"
	r, err := NewReader(strings.NewReader(text), "t.swf")
	if err != nil {
		t.Fatal(err)
	}
	jobs := readAll(t, r)
	// Requested processors unknown → allocated; requested time unknown → run time.
	if p, e := jobs[0].Procs(), jobs[0].Estimate(); p != 12 || e != 30 {
		t.Errorf("job 5: procs %d estimate %d", p, e)
	}
	// Requested time smaller than the run time is raised to it.
	if p, e := jobs[1].Procs(), jobs[1].Estimate(); p != 4 || e != 30 {
		t.Errorf("job 6: procs %d estimate %d", p, e)
	}
	got := []Skip{Check(&jobs[0], 128), Check(&jobs[1], 128), Check(&jobs[2], 128), Check(&jobs[3], 128), Check(&jobs[4], 128)}
	want := []Skip{Keep, Keep, NoRunTime, NoProcs, TooWide}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("record %d: %v, want %v", i, got[i], want[i])
		}
	}
	// The pool in use, not only MaxProcs (§6.13).
	if Check(&jobs[0], 8) != TooWide {
		t.Error("a 12-wide job on an 8-GPU pool must be skipped")
	}
}

func TestEmptyAndHeaderOnly(t *testing.T) {
	for _, text := range []string{"", ";\n; MaxProcs: 4\n", "\n\n"} {
		r, err := NewReader(strings.NewReader(text), "t.swf")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Next(); err != io.EOF {
			t.Fatalf("%q: %v", text, err)
		}
	}
}

func FuzzReader(f *testing.F) {
	raw, err := os.ReadFile(excerpt)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(raw[:4000])
	f.Add([]byte("; MaxProcs: 8\n1 0 5 100 4 -1 -1 4 200 -1 1 1 1 -1 0 -1 -1 -1\n"))
	f.Add(gz(f, raw[:3000]))
	f.Add([]byte("; Queue: x\n"))
	f.Add([]byte{0x1f, 0x8b, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := NewReader(bytes.NewReader(b), "fuzz.swf")
		if err != nil {
			return
		}
		for range 100000 {
			j, err := r.Next()
			if err != nil {
				var pe *ParseError
				if err != io.EOF && errors.As(err, &pe) && (pe.File != "fuzz.swf" || pe.Line <= 0) {
					t.Fatalf("error without file and line: %v", err)
				}
				return
			}
			Check(&j, r.Header().MaxProcs)
			_ = j.Estimate()
		}
	})
}

func BenchmarkReadExcerpt(b *testing.B) {
	raw, err := os.ReadFile(excerpt)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		r, err := NewReader(bytes.NewReader(raw), "x")
		if err != nil {
			b.Fatal(err)
		}
		for {
			if _, err := r.Next(); err != nil {
				break
			}
		}
	}
}

// A gzipped log of many readahead blocks, in two gzip members, reads as
// its plain text does; one cut short, or with a damaged byte, is an error
// that names the file (never a panic, never a silent end).
func TestGzipReadaheadBlocks(t *testing.T) {
	var text bytes.Buffer
	text.WriteString("; MaxProcs: 128\n")
	for i := range 30000 { // about 2.4 MB: ten blocks
		fmt.Fprintf(&text, "%d %d 10 3600 4 -1 -1 4 7200 -1 1 %d 2 -1 1 -1 -1 -1\n", i+1, 60*i, i%97)
	}
	raw := text.Bytes()
	half := bytes.IndexByte(raw[len(raw)/2:], '\n') + len(raw)/2 + 1
	twoMembers := append(gz(t, raw[:half]), gz(t, raw[half:])...)
	a, err := NewReader(bytes.NewReader(raw), "plain.swf")
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewReader(bytes.NewReader(twoMembers), "two.swf.gz")
	if err != nil {
		t.Fatal(err)
	}
	ja, jb := readAll(t, a), readAll(t, b)
	if len(ja) != 30000 || len(jb) != len(ja) {
		t.Fatalf("%d vs %d records", len(ja), len(jb))
	}
	for i := range ja {
		if ja[i] != jb[i] {
			t.Fatalf("record %d differs", i)
		}
	}
	whole := gz(t, raw)
	damaged := bytes.Clone(whole)
	damaged[len(damaged)/2] ^= 0xff
	for name, data := range map[string][]byte{"cut.swf.gz": whole[:len(whole)*2/3], "damaged.swf.gz": damaged} {
		r, err := NewReader(bytes.NewReader(data), name)
		if err == nil {
			for err == nil {
				_, err = r.Next()
			}
		}
		if err == io.EOF || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: %v, want an error naming the file", name, err)
		}
	}
}

// parsePlain gives what parse gives for every line it takes, and takes
// none that parse refuses: parse reads the rest.
func FuzzParsePlain(f *testing.F) {
	for _, s := range []string{
		"1 0 5 100 4 -1 -1 4 200 -1 1 1 1 -1 0 -1 -1 -1",
		"    1      0   1003   2088   128  -1  -1  128  2400  -1  1  1  1  -1  1  -1  -1  -1",
		"1\t0\t5\t100\t4\t-1\t-1\t4\t200\t-1\t1\t1\t1\t-1\t0\t-1\t-1\t-1",
		"1 0 5 100 4 -1 -1 4 200 -1 1 1 1 -1 0 -1 -1 -1 \r",
		"1 -5 5 100 4 -1 -1 4 200 -1 1 1 1 -1 0 -1 -1 -1",
		"1 0 5 100 4 12.5 -1 4 200 -1 1 1 1 -1 0 -1 -1 -1",
		"1 0 5 100 4 -1 -1 4 200 -1 1 1 1 -1 0 -1 -1",
		"1 0 5 100 4 -1 -1 4 200 -1 1 1 1 -1 0 -1 -1 -1 7",
		"1 0 5 100 4294967296 -1 -1 4 200 -1 1 1 1 -1 0 -1 -1 -1",
		"1 0 5 100 999999999 -1 -1 -999999999 200 -1 1 1 1 -1 0 -1 -1 -1",
		"999999999999999999 0 5 9223372036854775807 4 -1 -1 4 200 -1 1 1 1 -1 0 -1 -1 -1",
		"1 0 5 100 4 -1 -1 +4 200 -1 1 1 1 -1 0 -1 -1 -1",
		"1 0 5 1\r00 4 -1 -1 4 200 -1 1 1 1 -1 0 -1 -1 -1",
		"1 0 -0 - 4 -1 -1 4 200 -1 1 1 1 -1 0 -1 -1 -1",
		// "-1" and what only starts like it, for the "-1" field's
		// short cut (a blank must follow it).
		"1 0 -1 100 4 -1.5 -1 4 200 -12 1 1 1 -10 0 -1\t-1 -1",
		"1 0 5 100 4 -1 -1 4 200 -1 1 1 1 -1 0 -1 -1 -1x",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, ok := parsePlain(b)
		r := &Reader{name: "fuzz.swf", line: 1}
		want, err := r.parse(b)
		if !ok {
			return
		}
		if err != nil {
			t.Fatalf("%q: parsePlain took it, parse says %v", b, err)
		}
		if got != want {
			t.Fatalf("%q: parsePlain %+v, parse %+v", b, got, want)
		}
	})
}

// Every record of the excerpt takes parsePlain's way, not parse's.
func TestExcerptRecordsArePlain(t *testing.T) {
	raw, err := os.ReadFile(excerpt)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range bytes.Split(raw, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 || line[0] == ';' {
			continue
		}
		n++
		if _, ok := parsePlain(line); !ok {
			t.Fatalf("record %d, %q: not plain", n, line)
		}
	}
	if n < 1000 {
		t.Fatalf("%d records: the excerpt has thousands", n)
	}
}

// parsePlain's fractions are strconv.ParseFloat's floats to the bit, at
// every split of up to 15 digits between the integer and the fraction.
func TestParsePlainFractionsAreParseFloats(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for n := range 200000 {
		intDigits := 1 + rng.IntN(15)
		fracDigits := 1 + rng.IntN(16-intDigits)
		if intDigits+fracDigits > 15 {
			fracDigits = 15 - intDigits
		}
		var sb strings.Builder
		if n%3 == 0 {
			sb.WriteByte('-')
		}
		for range intDigits {
			sb.WriteByte(byte('0' + rng.IntN(10)))
		}
		if fracDigits > 0 {
			sb.WriteByte('.')
			for range fracDigits {
				sb.WriteByte(byte('0' + rng.IntN(10)))
			}
		}
		field := sb.String()
		line := "1 0 5 100 4 " + field + " -1 4 200 -1 1 1 1 -1 0 -1 -1 -1"
		j, ok := parsePlain([]byte(line))
		if !ok {
			t.Fatalf("%q: not plain", field)
		}
		want, err := strconv.ParseFloat(field, 64)
		if err != nil {
			t.Fatal(err)
		}
		if math.Float64bits(j.AvgCPU) != math.Float64bits(want) {
			t.Fatalf("%q: %v (%#x), ParseFloat %v (%#x)", field, j.AvgCPU, math.Float64bits(j.AvgCPU), want, math.Float64bits(want))
		}
	}
}

// A gzipped file opened by Open (read whole, inflated from memory) and
// the same bytes streamed through a reader of no known type (inflated
// through a bufio.Reader) read as the plain text does, both members of
// a two-member file; a file cut short is an error naming it either way.
func TestGzipOpenedAndStreamed(t *testing.T) {
	var text bytes.Buffer
	text.WriteString("; MaxProcs: 128\n")
	for i := range 5000 {
		fmt.Fprintf(&text, "%d %d 10 3600 4 -1 -1 4 7200 -1 1 %d 2 -1 1 -1 -1 -1\n", i+1, 60*i, i%97)
	}
	raw := text.Bytes()
	half := bytes.IndexByte(raw[len(raw)/2:], '\n') + len(raw)/2 + 1
	twoMembers := append(gz(t, raw[:half]), gz(t, raw[half:])...)
	dir := t.TempDir()
	path := filepath.Join(dir, "two.swf.gz")
	if err := os.WriteFile(path, twoMembers, 0o644); err != nil {
		t.Fatal(err)
	}
	plain, err := NewReader(bytes.NewReader(raw), "plain.swf")
	if err != nil {
		t.Fatal(err)
	}
	want := readAll(t, plain)
	opened, c, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	streamed, err := NewReader(struct{ io.Reader }{bytes.NewReader(twoMembers)}, "streamed.swf.gz")
	if err != nil {
		t.Fatal(err)
	}
	for name, r := range map[string]*Reader{"opened": opened, "streamed": streamed} {
		if got := readAll(t, r); !slices.Equal(got, want) || len(got) != 5000 {
			t.Fatalf("%s: %d records, not the plain text's %d", name, len(got), len(want))
		}
	}
	cut := filepath.Join(dir, "cut.swf.gz")
	whole := gz(t, raw)
	if err := os.WriteFile(cut, whole[:len(whole)*2/3], 0o644); err != nil {
		t.Fatal(err)
	}
	r, c2, err := Open(cut)
	if err == nil {
		defer c2.Close()
		for err == nil {
			_, err = r.Next()
		}
	}
	if err == io.EOF || !strings.Contains(err.Error(), cut) {
		t.Errorf("%v, want an error naming %s", err, cut)
	}
}

// parsePlain takes a negative field other than "-1" (a preceding job of
// -5, a think time of -17, a requested memory of -2.5) and a "-1" that
// ends the line, with their signs.
func TestParsePlainNegatives(t *testing.T) {
	j, ok := parsePlain([]byte("1 0 5 100 4 -1 -1 4 200 -2.5 1 1 1 -1 0 -1 -5 -17"))
	if !ok || j.Preceding != -5 || j.Think != -17 || j.ReqMem != -2.5 || j.Partition != -1 {
		t.Fatalf("ok %v, %+v", ok, j)
	}
	j, ok = parsePlain([]byte("1 0 5 100 4 -1 -1 4 200 -1 1 1 1 -1 0 -1 -5 -1"))
	if !ok || j.Think != -1 || j.Preceding != -5 {
		t.Fatalf("ok %v, %+v", ok, j)
	}
}
