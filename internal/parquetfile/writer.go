package parquetfile

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// Kind is a column's type.
type Kind uint8

const (
	Int64     Kind = iota + 1 // INT64, annotated INT(64, true)
	Double                    // DOUBLE
	Boolean                   // BOOLEAN
	String                    // BYTE_ARRAY, annotated STRING (UTF-8)
	Int64List                 // a LIST of required INT(64, true)
)

func (k Kind) String() string {
	switch k {
	case Int64:
		return "int64"
	case Double:
		return "double"
	case Boolean:
		return "boolean"
	case String:
		return "string"
	case Int64List:
		return "list of int64"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Column is one column of a table.
type Column struct {
	Name string
	Kind Kind
	// Optional lets a row hold a null (Writer.Null) instead of a value.
	// A list is never optional: an empty list is its absence.
	Optional bool
}

// Writer collects a table's rows, value by value in column order, and
// encodes the file when they are all in. A value of the wrong kind, too
// many or too few values in a row, or a null in a required column is an
// error, reported by EndRow or Bytes.
type Writer struct {
	cols []Column
	data []columnData
	rows int
	next int // the column the row's next value goes to
	err  error
}

// columnData is one column's encoded values and levels so far.
type columnData struct {
	values []byte  // PLAIN-encoded values, nulls left out
	bools  []bool  // a boolean column's values, bit-packed by Bytes
	def    []uint8 // definition levels (optional and list columns)
	rep    []uint8 // repetition levels (list columns)
	n      int     // level entries: values, nulls and empty lists
}

// NewWriter starts a table with the given columns; names must be
// non-empty and distinct.
func NewWriter(cols []Column) (*Writer, error) {
	seen := map[string]bool{}
	for i, c := range cols {
		switch {
		case c.Name == "":
			return nil, fmt.Errorf("parquet: column %d has no name", i)
		case seen[c.Name]:
			return nil, fmt.Errorf("parquet: column %q twice", c.Name)
		case c.Kind < Int64 || c.Kind > Int64List:
			return nil, fmt.Errorf("parquet: column %q: unknown kind %d", c.Name, c.Kind)
		case c.Kind == Int64List && c.Optional:
			return nil, fmt.Errorf("parquet: column %q: a list cannot be optional (write an empty list)", c.Name)
		}
		seen[c.Name] = true
	}
	if len(cols) == 0 {
		return nil, errors.New("parquet: a table needs a column")
	}
	return &Writer{cols: cols, data: make([]columnData, len(cols))}, nil
}

// take returns the next column's data for a value of kind k, or nil
// after an error.
func (w *Writer) take(k Kind) *columnData {
	if w.err != nil {
		return nil
	}
	if w.next == len(w.cols) {
		w.err = fmt.Errorf("parquet: row %d: more than %d values", w.rows, len(w.cols))
		return nil
	}
	c := &w.cols[w.next]
	if c.Kind != k {
		w.err = fmt.Errorf("parquet: row %d, column %q: a %s value in a %s column", w.rows, c.Name, k, c.Kind)
		return nil
	}
	d := &w.data[w.next]
	w.next++
	if c.Optional {
		d.def = append(d.def, 1)
	}
	d.n++
	return d
}

// Int64 sets the row's next value.
func (w *Writer) Int64(v int64) {
	if d := w.take(Int64); d != nil {
		d.values = binary.LittleEndian.AppendUint64(d.values, uint64(v))
	}
}

// Double sets the row's next value.
func (w *Writer) Double(v float64) {
	if d := w.take(Double); d != nil {
		d.values = binary.LittleEndian.AppendUint64(d.values, math.Float64bits(v))
	}
}

// Bool sets the row's next value.
func (w *Writer) Bool(v bool) {
	if d := w.take(Boolean); d != nil {
		d.bools = append(d.bools, v)
	}
}

// String sets the row's next value.
func (w *Writer) String(s string) {
	if d := w.take(String); d != nil {
		d.values = binary.LittleEndian.AppendUint32(d.values, uint32(len(s)))
		d.values = append(d.values, s...)
	}
}

// Int64List sets the row's next value, a list (empty or nil: no
// element).
func (w *Writer) Int64List(vs []int64) {
	d := w.take(Int64List)
	if d == nil {
		return
	}
	// Nested encoding: an empty list is one entry of definition level 0;
	// each element has definition level 1 and repetition level 0 for a
	// list's first element, 1 for the others.
	d.n-- // take counted one entry; a list has one per element
	if len(vs) == 0 {
		d.def, d.rep = append(d.def, 0), append(d.rep, 0)
		d.n++
		return
	}
	for i, v := range vs {
		d.def = append(d.def, 1)
		d.rep = append(d.rep, min(uint8(i), 1))
		d.values = binary.LittleEndian.AppendUint64(d.values, uint64(v))
	}
	d.n += len(vs)
}

// Null sets the row's next value to null; the column must be optional.
func (w *Writer) Null() {
	if w.err != nil {
		return
	}
	if w.next == len(w.cols) {
		w.err = fmt.Errorf("parquet: row %d: more than %d values", w.rows, len(w.cols))
		return
	}
	c := &w.cols[w.next]
	if !c.Optional {
		w.err = fmt.Errorf("parquet: row %d, column %q: null in a required column", w.rows, c.Name)
		return
	}
	d := &w.data[w.next]
	w.next++
	d.def = append(d.def, 0)
	d.n++
}

// EndRow ends a row, which must have had a value or null for every
// column.
func (w *Writer) EndRow() error {
	if w.err == nil && w.next != len(w.cols) {
		w.err = fmt.Errorf("parquet: row %d: %d values for %d columns", w.rows, w.next, len(w.cols))
	}
	if w.err != nil {
		return w.err
	}
	w.rows++
	w.next = 0
	return nil
}

// Rows is the number of rows ended so far.
func (w *Writer) Rows() int { return w.rows }

// Thrift enum values and field types used below (parquet.thrift).
const (
	typeBoolean   = 0
	typeInt64     = 2
	typeDouble    = 5
	typeByteArray = 6

	repRequired = 0
	repOptional = 1
	repRepeated = 2

	convertedUTF8  = 0
	convertedList  = 3
	convertedInt64 = 18

	encodingPlain = 0
	encodingRLE   = 3

	pageData = 0

	codecUncompressed = 0
)

// physical is a column's Parquet physical type.
func (k Kind) physical() int32 {
	switch k {
	case Double:
		return typeDouble
	case Boolean:
		return typeBoolean
	case String:
		return typeByteArray
	}
	return typeInt64
}

// Bytes encodes the file: "PAR1", a column chunk per column, the
// FileMetaData footer, its length and "PAR1" again.
func (w *Writer) Bytes() ([]byte, error) {
	if w.err != nil {
		return nil, w.err
	}
	if w.next != 0 {
		return nil, fmt.Errorf("parquet: row %d has %d of %d values: end it first", w.rows, w.next, len(w.cols))
	}
	out := []byte("PAR1")
	type chunk struct{ offset, size int64 }
	chunks := make([]chunk, len(w.cols))
	for i := range w.cols {
		c, d := &w.cols[i], &w.data[i]
		var body []byte
		if c.Kind == Int64List {
			body = appendLevels(body, d.rep)
		}
		if c.Optional || c.Kind == Int64List {
			body = appendLevels(body, d.def)
		}
		if c.Kind == Boolean {
			body = appendBits(body, d.bools)
		} else {
			body = append(body, d.values...)
		}
		if len(body) > math.MaxInt32 {
			return nil, fmt.Errorf("parquet: column %q: %d bytes, more than a page holds", c.Name, len(body))
		}
		var h thrift
		h.begin()
		h.i32(1, pageData)
		h.i32(2, int32(len(body))) // uncompressed size
		h.i32(3, int32(len(body))) // compressed size: the same, uncompressed
		h.beginStruct(5)           // DataPageHeader
		h.i32(1, int32(d.n))
		h.i32(2, encodingPlain)
		h.i32(3, encodingRLE) // definition levels
		h.i32(4, encodingRLE) // repetition levels
		h.end()
		h.end()
		chunks[i] = chunk{offset: int64(len(out)), size: int64(len(h.b) + len(body))}
		out = append(out, h.b...)
		out = append(out, body...)
	}

	var m thrift
	m.begin() // FileMetaData
	m.i32(1, 1)
	// The schema, depth first: the root, then each column (a list is three
	// elements: the annotated group, its repeated group, the element).
	n := 1
	for _, c := range w.cols {
		n++
		if c.Kind == Int64List {
			n += 2
		}
	}
	m.listHeader(2, thriftStruct, n)
	m.begin()
	m.str(4, "schema")
	m.i32(5, int32(len(w.cols)))
	m.end()
	for _, c := range w.cols {
		if c.Kind == Int64List {
			m.begin()
			m.i32(3, repRequired)
			m.str(4, c.Name)
			m.i32(5, 1)
			m.i32(6, convertedList)
			m.beginStruct(10) // LogicalType
			m.beginStruct(3)  // LIST
			m.end()
			m.end()
			m.end()
			m.begin()
			m.i32(3, repRepeated)
			m.str(4, "list")
			m.i32(5, 1)
			m.end()
			schemaLeaf(&m, "element", Int64, repRequired)
			continue
		}
		rep := int32(repRequired)
		if c.Optional {
			rep = repOptional
		}
		schemaLeaf(&m, c.Name, c.Kind, rep)
	}
	m.i64(3, int64(w.rows))
	m.listHeader(4, thriftStruct, 1) // one row group
	m.begin()
	m.listHeader(1, thriftStruct, len(w.cols))
	var total int64
	for i, c := range w.cols {
		ch := chunks[i]
		total += ch.size
		m.begin() // ColumnChunk
		m.i64(2, ch.offset)
		m.beginStruct(3) // ColumnMetaData
		m.i32(1, c.Kind.physical())
		m.listHeader(2, thriftI32, 2)
		m.b = appendZigzag(m.b, encodingPlain)
		m.b = appendZigzag(m.b, encodingRLE)
		path := []string{c.Name}
		if c.Kind == Int64List {
			path = append(path, "list", "element")
		}
		m.listHeader(3, thriftBinary, len(path))
		for _, p := range path {
			m.b = binary.AppendUvarint(m.b, uint64(len(p)))
			m.b = append(m.b, p...)
		}
		m.i32(4, codecUncompressed)
		m.i64(5, int64(w.data[i].n))
		m.i64(6, ch.size)
		m.i64(7, ch.size)
		m.i64(9, ch.offset)
		m.end()
		m.end()
	}
	m.i64(2, total)
	m.i64(3, int64(w.rows))
	m.end()
	m.str(6, "bursar internal/parquetfile")
	m.end()
	out = append(out, m.b...)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(m.b)))
	return append(out, "PAR1"...), nil
}

// schemaLeaf writes the SchemaElement of a column of values.
func schemaLeaf(m *thrift, name string, k Kind, rep int32) {
	m.begin()
	m.i32(1, k.physical())
	m.i32(3, rep)
	m.str(4, name)
	switch k {
	case Int64, Int64List:
		m.i32(6, convertedInt64)
		m.beginStruct(10) // LogicalType
		m.beginStruct(10) // INTEGER
		m.byteField(1, 64)
		m.boolField(2, true)
		m.end()
		m.end()
	case String:
		m.i32(6, convertedUTF8)
		m.beginStruct(10) // LogicalType
		m.beginStruct(1)  // STRING
		m.end()
		m.end()
	}
	m.end()
}

// appendLevels appends levels of bit width 1 as the RLE / bit-packing
// hybrid, in runs only (each run: its length shifted left once, as a
// ULEB128, then its value in one byte), preceded by the encoded length as
// a 4-byte little-endian integer, as a v1 data page stores them.
func appendLevels(b []byte, levels []uint8) []byte {
	at := len(b)
	b = append(b, 0, 0, 0, 0)
	for i := 0; i < len(levels); {
		j := i + 1
		for j < len(levels) && levels[j] == levels[i] {
			j++
		}
		b = binary.AppendUvarint(b, uint64(j-i)<<1)
		b = append(b, levels[i])
		i = j
	}
	binary.LittleEndian.PutUint32(b[at:], uint32(len(b)-at-4))
	return b
}

// appendBits appends booleans PLAIN-encoded: one bit each, the first in
// the least significant bit of the first byte.
func appendBits(b []byte, vs []bool) []byte {
	for i := 0; i < len(vs); i += 8 {
		var x byte
		for k := 0; k < 8 && i+k < len(vs); k++ {
			if vs[i+k] {
				x |= 1 << k
			}
		}
		b = append(b, x)
	}
	return b
}
