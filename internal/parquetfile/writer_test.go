package parquetfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"testing"

	pq "github.com/parquet-go/parquet-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// cell is one value of a row as the tests keep it: nil for a null.
type cell any

// write encodes rows with a Writer.
func write(t require.TestingT, cols []Column, rows [][]cell) []byte {
	w, err := NewWriter(cols)
	require.NoError(t, err)
	for _, row := range rows {
		for _, v := range row {
			switch x := v.(type) {
			case nil:
				w.Null()
			case int64:
				w.Int64(x)
			case float64:
				w.Double(x)
			case bool:
				w.Bool(x)
			case string:
				w.String(x)
			case []int64:
				w.Int64List(x)
			}
		}
		require.NoError(t, w.EndRow())
	}
	b, err := w.Bytes()
	require.NoError(t, err)
	return b
}

// readBack reads a file with parquet-go, an independent implementation,
// checking its schema against cols, and returns its rows as cells.
func readBack(t require.TestingT, cols []Column, data []byte) [][]cell {
	f, err := pq.OpenFile(bytes.NewReader(data), int64(len(data)))
	require.NoError(t, err)
	fields := f.Schema().Fields()
	require.Len(t, fields, len(cols))
	for i, c := range cols {
		fd := fields[i]
		require.Equal(t, c.Name, fd.Name())
		require.Equal(t, c.Optional, fd.Optional(), c.Name)
		if c.Kind == Int64List {
			lt := fd.Type().LogicalType()
			require.True(t, lt != nil && lt.String() == "LIST", "%s: a LIST", c.Name)
			el := fd.Fields()[0].Fields()[0]
			require.Equal(t, "INT64", el.Type().Kind().String())
			continue
		}
		require.True(t, fd.Leaf())
		want := map[Kind]string{Int64: "INT64", Double: "DOUBLE", Boolean: "BOOLEAN", String: "BYTE_ARRAY"}[c.Kind]
		require.Equal(t, want, fd.Type().Kind().String(), c.Name)
		lt := fd.Type().LogicalType()
		switch c.Kind {
		case String:
			require.True(t, lt != nil && lt.String() == "STRING", "%s: STRING", c.Name)
		case Int64:
			require.True(t, lt != nil && lt.String() == "INT(64,true)", "%s: INT(64, true)", c.Name)
		}
	}
	require.Len(t, f.RowGroups(), 1)
	n := f.NumRows()
	rr := f.RowGroups()[0].Rows()
	defer rr.Close()
	var out [][]cell
	buf := make([]pq.Row, 7)
	for {
		k, err := rr.ReadRows(buf)
		for _, r := range buf[:k] {
			row := make([]cell, len(cols))
			for i, c := range cols {
				if c.Kind == Int64List {
					row[i] = []int64{}
				}
			}
			for _, v := range r {
				c := cols[v.Column()]
				switch {
				case v.IsNull():
					if c.Kind != Int64List {
						row[v.Column()] = nil
					}
				case c.Kind == Int64List:
					row[v.Column()] = append(row[v.Column()].([]int64), v.Int64())
				case c.Kind == Int64:
					row[v.Column()] = v.Int64()
				case c.Kind == Double:
					row[v.Column()] = v.Double()
				case c.Kind == Boolean:
					row[v.Column()] = v.Boolean()
				case c.Kind == String:
					row[v.Column()] = string(v.ByteArray())
				}
			}
			out = append(out, row)
		}
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
	}
	require.Equal(t, int(n), len(out))
	return out
}

// normalize makes nil and empty lists alike, as the file does.
func normalize(rows [][]cell, cols []Column) [][]cell {
	for _, r := range rows {
		for i, c := range cols {
			if c.Kind == Int64List && len(r[i].([]int64)) == 0 {
				r[i] = []int64{}
			}
		}
	}
	return rows
}

// A hand-made table of every kind: the reader sees the columns, types,
// nulls, empty and long lists, and values written.
func TestEveryKindReadsBack(t *testing.T) {
	cols := []Column{
		{Name: "job", Kind: Int64}, {Name: "class", Kind: String}, {Name: "starts", Kind: Int64List},
		{Name: "measured", Kind: Boolean}, {Name: "wait", Kind: Int64, Optional: true},
		{Name: "bsld", Kind: Double, Optional: true}, {Name: "note", Kind: String, Optional: true},
	}
	var rows [][]cell
	for i := range 20 {
		starts := make([]int64, i%4)
		for k := range starts {
			starts[k] = int64(1000*i + k)
		}
		var wait, bsld, note cell = int64(-i), 1.5 * float64(i), "é ∞"
		if i%3 == 0 {
			wait, bsld, note = nil, nil, nil
		}
		rows = append(rows, []cell{int64(i) << 40, fmt.Sprint("class ", i), starts, i%2 == 1, wait, bsld, note})
	}
	got := readBack(t, cols, write(t, cols, rows))
	assert.Equal(t, normalize(rows, cols), got)
}

// Any table: random columns of every kind, random rows, nulls, lists
// empty or not, values at the extremes of their types.
func TestRandomTablesReadBack(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		nc := rapid.IntRange(1, 6).Draw(t, "columns")
		cols := make([]Column, nc)
		for i := range cols {
			k := Kind(rapid.IntRange(int(Int64), int(Int64List)).Draw(t, "kind"))
			cols[i] = Column{Name: fmt.Sprintf("c%d", i), Kind: k, Optional: k != Int64List && rapid.Bool().Draw(t, "optional")}
		}
		nr := rapid.IntRange(0, 40).Draw(t, "rows")
		rows := make([][]cell, nr)
		for r := range rows {
			rows[r] = make([]cell, nc)
			for i, c := range cols {
				if c.Optional && rapid.IntRange(0, 3).Draw(t, "null") == 0 {
					continue
				}
				switch c.Kind {
				case Int64:
					rows[r][i] = rapid.Int64().Draw(t, "int")
				case Double:
					rows[r][i] = rapid.Float64().Draw(t, "double")
				case Boolean:
					rows[r][i] = rapid.Bool().Draw(t, "bool")
				case String:
					rows[r][i] = rapid.String().Draw(t, "string")
				case Int64List:
					rows[r][i] = rapid.SliceOfN(rapid.Int64(), 0, 20).Draw(t, "list")
				}
			}
		}
		got := readBack(t, cols, write(t, cols, rows))
		want := normalize(rows, cols)
		if len(want) == 0 {
			want = nil
		}
		require.Equal(t, want, got)
	})
}

// NaN and the infinities are values (the callers write NaN as a null
// themselves, where runs.csv has an empty cell).
func TestDoubleBitsKept(t *testing.T) {
	cols := []Column{{Name: "x", Kind: Double}}
	got := readBack(t, cols, write(t, cols, [][]cell{{math.Inf(1)}, {math.Inf(-1)}, {math.Copysign(0, -1)}, {math.NaN()}}))
	require.Len(t, got, 4)
	assert.True(t, math.IsInf(got[0][0].(float64), 1))
	assert.True(t, math.IsInf(got[1][0].(float64), -1))
	assert.True(t, math.Signbit(got[2][0].(float64)))
	assert.True(t, math.IsNaN(got[3][0].(float64)))
}

// Levels as the RLE / bit-packing hybrid in runs (Encodings.md): the runs
// 1,1,1 / 0 / 1,1 are (3<<1, 1), (1<<1, 0), (2<<1, 1) after the 4-byte
// little-endian length 6.
func TestLevelsByHand(t *testing.T) {
	assert.Equal(t, []byte{6, 0, 0, 0, 6, 1, 2, 0, 4, 1}, appendLevels(nil, []uint8{1, 1, 1, 0, 1, 1}))
	assert.Equal(t, []byte{0, 0, 0, 0}, appendLevels(nil, nil))
	// A run of 100: its header 200 is the ULEB128 0xc8 0x01.
	long := make([]uint8, 100)
	assert.Equal(t, []byte{3, 0, 0, 0, 0xc8, 0x01, 0}, appendLevels(nil, long))
	// Booleans: the first value in the lowest bit.
	assert.Equal(t, []byte{0b0000_0101, 0b1}, appendBits(nil, []bool{true, false, true, false, false, false, false, false, true}))
}

// The compact protocol by hand (thrift-compact-protocol.md): field 1 an
// i32 of 3 is the header 0x15 then zigzag 6; field 20 after field 1 needs
// the long header (type, then the zigzag id 40); a bool true is the
// header's type 1; a list of two i32 is 0x25; a struct ends with 0.
func TestThriftByHand(t *testing.T) {
	var m thrift
	m.begin()
	m.i32(1, 3)
	m.i64(20, -1)
	m.boolField(21, true)
	m.listHeader(22, thriftI32, 2)
	m.b = appendZigzag(m.b, 1)
	m.b = appendZigzag(m.b, 2)
	m.str(23, "ab")
	m.end()
	assert.Equal(t, []byte{0x15, 6, 0x06, 40, 1, 0x11, 0x19, 0x25, 2, 4, 0x18, 2, 'a', 'b', 0}, m.b)
}

func TestWriterErrors(t *testing.T) {
	_, err := NewWriter(nil)
	assert.ErrorContains(t, err, "needs a column")
	_, err = NewWriter([]Column{{Name: "a", Kind: Int64}, {Name: "a", Kind: Double}})
	assert.ErrorContains(t, err, `column "a" twice`)
	_, err = NewWriter([]Column{{Name: "", Kind: Int64}})
	assert.ErrorContains(t, err, "no name")
	_, err = NewWriter([]Column{{Name: "l", Kind: Int64List, Optional: true}})
	assert.ErrorContains(t, err, "cannot be optional")
	_, err = NewWriter([]Column{{Name: "k", Kind: 9}})
	assert.ErrorContains(t, err, "unknown kind")

	cols := []Column{{Name: "n", Kind: Int64}, {Name: "x", Kind: Double, Optional: true}}
	w, _ := NewWriter(cols)
	w.Double(1)
	assert.ErrorContains(t, w.EndRow(), `row 0, column "n": a double value in a int64 column`)
	w, _ = NewWriter(cols)
	w.Null()
	assert.ErrorContains(t, w.EndRow(), `column "n": null in a required column`)
	w, _ = NewWriter(cols)
	w.Int64(1)
	assert.ErrorContains(t, w.EndRow(), "row 0: 1 values for 2 columns")
	w, _ = NewWriter(cols)
	w.Int64(1)
	w.Null()
	w.Int64(2)
	assert.ErrorContains(t, w.EndRow(), "more than 2 values")
	w, _ = NewWriter(cols)
	w.Int64(1)
	_, err = w.Bytes()
	assert.ErrorContains(t, err, "end it first")
}
