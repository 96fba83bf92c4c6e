package swf

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/klauspost/compress/gzip"
)

// Unknown is the SWF value of a field that was not recorded.
const Unknown = -1

// Status values of field 11.
const (
	StatusFailed    = 0
	StatusCompleted = 1
	StatusCancelled = 5
)

// Job is one record: the 18 fields in file order, −1 where unknown.
type Job struct {
	Number     int64   // 1: job number
	Submit     int64   // 2: submit time, seconds after the log's start
	Wait       int64   // 3: wait time, seconds
	Run        int64   // 4: run time, seconds
	AllocProcs int     // 5: allocated processors
	AvgCPU     float64 // 6: average CPU time used, seconds
	UsedMem    float64 // 7: used memory, KB per processor
	ReqProcs   int     // 8: requested processors
	ReqTime    int64   // 9: requested time (the user's runtime estimate), seconds
	ReqMem     float64 // 10: requested memory, KB per processor
	Status     int     // 11: 1 completed, 0 failed, 5 cancelled
	User       int     // 12: user id
	Group      int     // 13: group id
	Executable int     // 14: application number
	Queue      int     // 15: queue number
	Partition  int     // 16: partition number
	Preceding  int64   // 17: preceding job number
	Think      int64   // 18: think time from the preceding job, seconds
}

// FieldNames are the 18 fields' names, 1-based index minus one, as they
// appear in errors.
var FieldNames = [18]string{
	"job number", "submit time", "wait time", "run time", "allocated processors",
	"average CPU time", "used memory", "requested processors", "requested time",
	"requested memory", "status", "user id", "group id", "executable", "queue",
	"partition", "preceding job", "think time",
}

// Procs is the job's width: the requested processors, or the allocated
// ones where the request is unknown (docs/studies.md §3).
func (j *Job) Procs() int {
	if j.ReqProcs > 0 {
		return j.ReqProcs
	}
	return j.AllocProcs
}

// Estimate is the job's runtime estimate for backfilling: the requested
// time, raised to the run time where missing or smaller (docs/studies.md §2.1).
func (j *Job) Estimate() int64 {
	return max(j.ReqTime, j.Run)
}

// Queue is one `; Queue: n name` header line.
type Queue struct {
	Number int
	Name   string
}

// Partition is one `; Partition: n name` header line.
type Partition struct {
	Number int
	Name   string
}

// Header is what the leading `;` comment lines say about the log. Numeric
// fields the header does not give are −1 (UnixStartTime, TimeZone: 0 and
// HasTimeZone false).
type Header struct {
	Version        string
	Computer       string
	Installation   string
	MaxJobs        int64
	MaxRecords     int64
	MaxNodes       int
	MaxProcs       int
	MaxRuntime     int64
	MaxMemory      int64
	MaxQueues      int
	MaxPartitions  int
	UnixStartTime  int64
	TimeZone       int64 // seconds to add to UTC (SWF's TimeZone field; 2.2 deprecates it for TimeZoneString)
	HasTimeZone    bool
	TimeZoneString string
	StartTime      string
	EndTime        string
	Queues         []Queue
	Partitions     []Partition
	Notes          []string // every `Note:` line's text, continuation lines folded in
	// Fields holds every `Key: value` line in file order, including those
	// above and unknown ones (first line of a value only).
	Fields []KeyValue
	// Lines are the comment lines verbatim (without the line break), so that
	// a copy can keep the header intact.
	Lines []string
}

// KeyValue is one `; Key: value` header line.
type KeyValue struct {
	Key, Value string
	Line       int
}

// QueueName is the header's name of queue n, "" when the header does not
// name it.
func (h *Header) QueueName(n int) string {
	for _, q := range h.Queues {
		if q.Number == n {
			return q.Name
		}
	}
	return ""
}

// Field is the value of the header's first `Key: value` line with that
// key (case-insensitive), and whether there is one.
func (h *Header) Field(key string) (string, bool) {
	for _, f := range h.Fields {
		if strings.EqualFold(f.Key, key) {
			return strings.TrimSpace(f.Value), true
		}
	}
	return "", false
}

// Preemption reads SWF 2.2's `Preemption` header field: whether the
// machine may preempt jobs (any value but `No`), and whether the header
// says at all.
func (h *Header) Preemption() (preempted, stated bool) {
	v, ok := h.Field("Preemption")
	if !ok || v == "" {
		return false, false
	}
	return !strings.EqualFold(v, "No"), true
}

// ParseError is a malformed line: the file, the 1-based line, and the
// 1-based field (0 for a header line or the record as a whole).
type ParseError struct {
	File  string
	Line  int
	Field int
	Name  string // the field's or header key's name
	Text  string // the offending text, cut to 40 bytes
	Err   error
}

func (e *ParseError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s:%d: ", e.File, e.Line)
	if e.Field > 0 {
		fmt.Fprintf(&b, "field %d (%s)", e.Field, e.Name)
	} else if e.Name != "" {
		fmt.Fprintf(&b, "header %s", e.Name)
	} else {
		b.WriteString("record")
	}
	if e.Text != "" {
		fmt.Fprintf(&b, " %q", e.Text)
	}
	fmt.Fprintf(&b, ": %v", e.Err)
	return b.String()
}

func (e *ParseError) Unwrap() error { return e.Err }

// ErrSyntax wraps every malformed-input error.
var ErrSyntax = errors.New("not valid SWF")

// maxLine bounds one line, so that a binary file fed by mistake is an error
// rather than an unbounded buffer.
const maxLine = 1 << 16

// Reader streams the records of one log. Its header is read when it is
// created.
type Reader struct {
	name    string
	sc      *bufio.Scanner
	gz      *gzip.Reader
	line    int
	header  Header
	pending []byte // the first record line, read while scanning the header
	hasPend bool
	fields  [18][]byte
}

// NewReader reads the header of a log from r (plain or gzip, detected by
// the magic bytes); name is the file name used in errors.
func NewReader(r io.Reader, name string) (*Reader, error) {
	rd := &Reader{name: name}
	var src io.Reader
	if b, ok := r.(*bytes.Reader); ok && gzipAt(b) {
		// A gzipped log held in memory (an embedded one, or a file Open
		// read whole) is inflated from it directly: klauspost's inflater
		// reads a *bytes.Reader a byte at a time through its inlined
		// ReadByte, a *bufio.Reader through a call a byte (31 M of the
		// 1.30 G instructions of trace --policy fifo on SDSC-SP2's gzip
		// file).
		gz, err := rd.inflate(b)
		if err != nil {
			return nil, err
		}
		src = gz
	} else {
		br := bufio.NewReaderSize(r, 64<<10)
		src = br
		if magic, err := br.Peek(2); err == nil && magic[0] == 0x1f && magic[1] == 0x8b {
			gz, err := rd.inflate(br)
			if err != nil {
				return nil, err
			}
			src = gz
		}
	}
	rd.sc = bufio.NewScanner(src)
	rd.sc.Buffer(make([]byte, 64<<10), maxLine)
	rd.header = Header{
		MaxJobs: -1, MaxRecords: -1, MaxNodes: -1, MaxProcs: -1, MaxRuntime: -1,
		MaxMemory: -1, MaxQueues: -1, MaxPartitions: -1, UnixStartTime: -1,
	}
	if err := rd.readHeader(); err != nil {
		return nil, err
	}
	return rd, nil
}

// inflate is the log inflated from the gzip stream src, one block ahead
// (readahead), the reader's gz set to close it at the end.
func (rd *Reader) inflate(src io.Reader) (io.Reader, error) {
	// klauspost/compress's gzip, the standard library's API and
	// errors: it inflates the full SDSC-SP2 log in about two thirds
	// of compress/gzip's time (64 against 99 ms, one core, loaded).
	gz, err := gzip.NewReader(src)
	if err != nil {
		return nil, fmt.Errorf("%s: gzip: %w", rd.name, err)
	}
	gz.Multistream(true)
	rd.gz = gz
	return newReadahead(gz), nil
}

// gzipAt reports whether b's unread bytes begin with gzip's magic.
func gzipAt(b *bytes.Reader) bool {
	var magic [2]byte
	n, _ := b.ReadAt(magic[:], b.Size()-int64(b.Len()))
	return n == 2 && magic[0] == 0x1f && magic[1] == 0x8b
}

// Open opens a log file; Close the reader when done. A gzipped file is
// read whole, its compressed bytes (1.2 MB for the full SDSC-SP2 log),
// and inflated from memory (NewReader); the bytes are garbage once the
// log is read, before a study's replays make its peak of memory.
func Open(path string) (*Reader, io.Closer, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	var src io.Reader = f
	var magic [2]byte
	// ReadAt fails on a pipe, which is then streamed as before.
	if n, _ := f.ReadAt(magic[:], 0); n == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		var buf bytes.Buffer
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
			buf.Grow(int(st.Size()) + bytes.MinRead)
		}
		if _, err := buf.ReadFrom(f); err != nil {
			f.Close()
			return nil, nil, err
		}
		src = bytes.NewReader(buf.Bytes())
	}
	r, err := NewReader(src, path)
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return r, f, nil
}

// Header is the log's header.
func (r *Reader) Header() *Header { return &r.header }

// Name is the file name the reader reports in errors.
func (r *Reader) Name() string { return r.name }

// Line is the 1-based number of the last line read.
func (r *Reader) Line() int { return r.line }

func (r *Reader) scan() ([]byte, error) {
	if !r.sc.Scan() {
		if err := r.sc.Err(); err != nil {
			if errors.Is(err, bufio.ErrTooLong) {
				return nil, &ParseError{File: r.name, Line: r.line + 1, Err: fmt.Errorf("%w: line longer than %d bytes", ErrSyntax, maxLine)}
			}
			return nil, fmt.Errorf("%s:%d: %w", r.name, r.line+1, err)
		}
		return nil, io.EOF
	}
	r.line++
	return r.sc.Bytes(), nil
}

func (r *Reader) readHeader() error {
	var lastKey string
	for {
		b, err := r.scan()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		t := bytes.TrimSpace(b)
		if len(t) == 0 {
			continue
		}
		if t[0] != ';' {
			r.pending = b
			r.hasPend = true
			return nil
		}
		if !isText(b) {
			return &ParseError{File: r.name, Line: r.line, Err: fmt.Errorf("%w: header line is not text", ErrSyntax)}
		}
		r.header.Lines = append(r.header.Lines, string(b))
		key, err := r.headerLine(string(t[1:]), lastKey)
		if err != nil {
			return err
		}
		lastKey = key
	}
}

// isKey reports whether k looks like a header key: a letter, then letters,
// digits or underscores.
func isKey(k string) bool {
	for i, c := range k {
		letter := c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z'
		if !letter && (i == 0 || (c != '_' && (c < '0' || c > '9'))) {
			return false
		}
	}
	return k != ""
}

// isText reports whether b holds no control bytes other than tab and CR.
func isText(b []byte) bool {
	for _, c := range b {
		if c < 0x20 && c != '\t' && c != '\r' {
			return false
		}
	}
	return true
}

// headerLine interprets one comment (without its ';'). A line without a
// `Key:` continues the previous key's value (only Note keeps continuations).
func (r *Reader) headerLine(s, lastKey string) (string, error) {
	s = strings.TrimSpace(s)
	colon := strings.IndexByte(s, ':')
	if colon <= 0 || !isKey(s[:colon]) || strings.HasPrefix(s[colon+1:], "//") {
		// Not a `Key: value` line (a URL's "http:" is no key): it continues
		// the previous key's value.
		if lastKey == "Note" && s != "" && len(r.header.Notes) > 0 {
			n := len(r.header.Notes) - 1
			r.header.Notes[n] += " " + s
		}
		if s == "" {
			return "", nil
		}
		return lastKey, nil
	}
	key, val := s[:colon], strings.TrimSpace(s[colon+1:])
	r.header.Fields = append(r.header.Fields, KeyValue{Key: key, Value: val, Line: r.line})
	h := &r.header
	bad := func(err error) error {
		return &ParseError{File: r.name, Line: r.line, Name: key, Text: cut(val), Err: fmt.Errorf("%w: %v", ErrSyntax, err)}
	}
	integer := func(dst *int64) error {
		v, err := strconv.ParseInt(val, 10, 64)
		if err != nil {
			return bad(errors.New("not an integer"))
		}
		*dst = v
		return nil
	}
	small := func(dst *int) error {
		v, err := strconv.ParseInt(val, 10, 32)
		if err != nil {
			return bad(errors.New("not an integer"))
		}
		*dst = int(v)
		return nil
	}
	var err error
	switch key {
	case "Version":
		h.Version = val
	case "Computer":
		h.Computer = val
	case "Installation":
		h.Installation = val
	case "MaxJobs":
		err = integer(&h.MaxJobs)
	case "MaxRecords":
		err = integer(&h.MaxRecords)
	case "MaxNodes":
		err = small(&h.MaxNodes)
	case "MaxProcs":
		err = small(&h.MaxProcs)
	case "MaxRuntime":
		err = integer(&h.MaxRuntime)
	case "MaxMemory":
		err = integer(&h.MaxMemory)
	case "MaxQueues":
		err = small(&h.MaxQueues)
	case "MaxPartitions":
		err = small(&h.MaxPartitions)
	case "UnixStartTime":
		err = integer(&h.UnixStartTime)
	case "TimeZone":
		err = integer(&h.TimeZone)
		h.HasTimeZone = err == nil
	case "TimeZoneString":
		h.TimeZoneString = val
	case "StartTime":
		h.StartTime = val
	case "EndTime":
		h.EndTime = val
	case "Note":
		h.Notes = append(h.Notes, val)
	case "Queue", "Partition":
		f := strings.Fields(val)
		if len(f) == 0 {
			return "", bad(errors.New("want a number and a name"))
		}
		n, perr := strconv.ParseInt(f[0], 10, 32)
		if perr != nil {
			return "", bad(errors.New("the number is not an integer"))
		}
		name := strings.Join(f[1:], " ")
		if key == "Queue" {
			h.Queues = append(h.Queues, Queue{Number: int(n), Name: name})
		} else {
			h.Partitions = append(h.Partitions, Partition{Number: int(n), Name: name})
		}
	}
	return key, err
}

func cut(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// Next returns the next record; io.EOF after the last. Comment and blank
// lines after the header are skipped.
func (r *Reader) Next() (Job, error) {
	for {
		var b []byte
		if r.hasPend {
			b, r.hasPend = r.pending, false
		} else {
			var err error
			if b, err = r.scan(); err != nil {
				if err == io.EOF && r.gz != nil {
					if cerr := r.gz.Close(); cerr != nil {
						return Job{}, fmt.Errorf("%s: gzip: %w", r.name, cerr)
					}
				}
				return Job{}, err
			}
		}
		t := bytes.TrimSpace(b)
		if len(t) == 0 || t[0] == ';' {
			continue
		}
		if j, ok := parsePlain(t); ok {
			return j, nil
		}
		return r.parse(t)
	}
}

// parsePlain parses a record whose 18 fields are plain decimal numbers
// (an optional '-', at most 18 digits; at most 9 in the 32-bit fields;
// in the three float fields a fraction too, at most 15 digits in all)
// with a submit time that is not negative: every record of the PWA's
// cleaned logs. It reads the line once, with no fields kept, and gives
// the Job that parse gives for it; ok is false on anything else (an
// exponent, a '+', too many digits, too few or too many fields), which
// parse then reads, so that its errors and its reading of the rest are
// the same as ever (FuzzParsePlain). Reading the 300k-job log, parse's
// field slices and parseInt's calls were half of a `trace --policy
// fifo` process's reading.
func parsePlain(b []byte) (j Job, ok bool) {
	var v [18]int64
	var f [18]float64
	i := 0
	for k := range v {
		if i >= len(b) {
			return Job{}, false
		}
		// A sign read once: "-1", the log's "unknown" (8 of the 18
		// fields of most records), then a blank is the value without
		// the digit loop and its checks, which the field passes; any
		// other '-' starts a negative number. A field without one (most
		// of the rest) costs the one test.
		neg := false
		if b[i] == '-' {
			if i+2 < len(b) && b[i+1] == '1' && (b[i+2] == ' ' || b[i+2] == '\t') {
				v[k], f[k] = -1, -1
				for i += 3; i < len(b); i++ {
					if c := b[i]; c > ' ' || c != ' ' && c != '\t' && c != '\r' {
						break
					}
				}
				continue
			}
			neg = true
			i++
		}
		start := i
		var x int64
		for i < len(b) {
			c := b[i] - '0'
			if c > 9 {
				break
			}
			x = x*10 + int64(c)
			i++
		}
		// The fields parse reads as 32-bit integers stay in range with
		// 9 digits, the others (plainWide) with 18; none may be empty.
		if n := i - start; n == 0 || n > int(plainDigits[k]) {
			return Job{}, false
		}
		if plainFloat>>k&1 != 0 {
			frac := 0
			if i < len(b) && b[i] == '.' {
				i++
				for i < len(b) && b[i]-'0' <= 9 {
					x = x*10 + int64(b[i]-'0')
					i++
					frac++
				}
				// m ÷ 10^frac with m below 2^53 (at most 15 digits)
				// and 10^frac exact is one correctly rounded division:
				// strconv.ParseFloat's own exact case, so the same float.
				if frac == 0 || i-start-1 > 15 {
					return Job{}, false
				}
			}
			f[k] = float64(x) / plainPow10[frac]
			if neg {
				f[k] = -f[k]
			}
		}
		if i < len(b) {
			if c := b[i]; c != ' ' && c != '\t' {
				return Job{}, false
			}
			i++
			// Blanks up to the next field: a byte above ' ' (a digit,
			// a sign, anything else the next field then refuses) ends
			// them at one test.
			for i < len(b) {
				if c := b[i]; c > ' ' || c != ' ' && c != '\t' && c != '\r' {
					break
				}
				i++
			}
		}
		if neg {
			x = -x
		}
		v[k] = x
	}
	if i < len(b) || v[1] < 0 {
		return Job{}, false
	}
	return Job{
		Number: v[0], Submit: v[1], Wait: v[2], Run: v[3], AllocProcs: int(v[4]),
		AvgCPU: f[5], UsedMem: f[6], ReqProcs: int(v[7]), ReqTime: v[8],
		ReqMem: f[9], Status: int(v[10]), User: int(v[11]), Group: int(v[12]),
		Executable: int(v[13]), Queue: int(v[14]), Partition: int(v[15]), Preceding: v[16], Think: v[17],
	}, true
}

// plainFloat marks the float fields (6, 7 and 10) by bit, plainWide the
// fields parse reads as 64-bit integers or floats (it checks the rest to
// be 32-bit); plainPow10 are the powers of ten a fraction of at most 15
// digits divides by.
const (
	plainFloat = 1<<5 | 1<<6 | 1<<9
	plainWide  = 1<<0 | 1<<1 | 1<<2 | 1<<3 | 1<<5 | 1<<6 | 1<<8 | 1<<9 | 1<<16 | 1<<17
)

// plainDigits is each field's most digits: 18 in the plainWide fields, 9
// in the others (a table rather than plainWide's bit shifted out at each
// field, which took 12 instructions a field).
var plainDigits = func() (d [18]uint8) {
	for k := range d {
		d[k] = uint8(9 + 9*(int(plainWide)>>k&1))
	}
	return d
}()

var plainPow10 = [16]float64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15}

func (r *Reader) parse(b []byte) (Job, error) {
	n := 0
	for len(b) > 0 {
		i := 0
		for i < len(b) && b[i] != ' ' && b[i] != '\t' {
			i++
		}
		if n == len(r.fields) {
			return Job{}, &ParseError{File: r.name, Line: r.line, Err: fmt.Errorf("%w: more than 18 fields", ErrSyntax)}
		}
		r.fields[n] = b[:i]
		n++
		for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r') {
			i++
		}
		b = b[i:]
	}
	if n < len(r.fields) {
		return Job{}, &ParseError{File: r.name, Line: r.line, Field: n + 1, Name: FieldNames[n], Err: fmt.Errorf("%w: missing (a record has 18 fields, this one %d)", ErrSyntax, n)}
	}
	var j Job
	var err error
	i64 := func(k int) int64 {
		if err != nil {
			return 0
		}
		v, ok := parseInt(r.fields[k])
		if !ok {
			err = r.fieldErr(k, "not an integer")
		}
		return v
	}
	i32 := func(k int) int {
		v := i64(k)
		if err == nil && (v > 1<<31-1 || v < -(1<<31)) {
			err = r.fieldErr(k, "out of range")
		}
		return int(v)
	}
	f64 := func(k int) float64 {
		if err != nil {
			return 0
		}
		if v, ok := parseInt(r.fields[k]); ok {
			return float64(v)
		}
		v, perr := strconv.ParseFloat(string(r.fields[k]), 64)
		if perr != nil || v != v {
			err = r.fieldErr(k, "not a number")
		}
		return v
	}
	j.Number = i64(0)
	j.Submit = i64(1)
	j.Wait = i64(2)
	j.Run = i64(3)
	j.AllocProcs = i32(4)
	j.AvgCPU = f64(5)
	j.UsedMem = f64(6)
	j.ReqProcs = i32(7)
	j.ReqTime = i64(8)
	j.ReqMem = f64(9)
	j.Status = i32(10)
	j.User = i32(11)
	j.Group = i32(12)
	j.Executable = i32(13)
	j.Queue = i32(14)
	j.Partition = i32(15)
	j.Preceding = i64(16)
	j.Think = i64(17)
	if err != nil {
		return Job{}, err
	}
	if j.Submit < 0 {
		return Job{}, r.fieldErr(1, "negative (a replayable record needs its submit time)")
	}
	return j, nil
}

func (r *Reader) fieldErr(k int, what string) error {
	return &ParseError{File: r.name, Line: r.line, Field: k + 1, Name: FieldNames[k], Text: cut(string(r.fields[k])), Err: fmt.Errorf("%w: %s", ErrSyntax, what)}
}

// parseInt parses an optionally signed decimal integer without allocating;
// ok is false on anything else or on overflow.
func parseInt(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 19 {
		if len(b) == 20 && b[0] == '-' {
			// fall through to the loop: "-" and 19 digits may still fit
		} else {
			return 0, false
		}
	}
	neg := false
	if b[0] == '-' || b[0] == '+' {
		neg = b[0] == '-'
		b = b[1:]
		if len(b) == 0 {
			return 0, false
		}
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + uint64(c-'0')
	}
	if neg {
		if v > 1<<63 {
			return 0, false
		}
		return -int64(v), true
	}
	if v > 1<<63-1 {
		return 0, false
	}
	return int64(v), true
}
