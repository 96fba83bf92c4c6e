package parquetfile

import "encoding/binary"

// Compact-protocol type ids (Thrift's compact protocol specification).
const (
	thriftTrue   = 1
	thriftFalse  = 2
	thriftByte   = 3
	thriftI32    = 5
	thriftI64    = 6
	thriftBinary = 8
	thriftList   = 9
	thriftStruct = 12
)

// thrift encodes structs in Thrift's compact protocol, the little of it
// that Parquet's footer and page headers use: a field header is the
// difference from the previous field id in the high nibble (or the id
// itself after the type when the difference is not 1–15) and the type in
// the low one; integers are zigzag ULEB128; strings their length then
// their bytes; a struct ends with a zero byte.
type thrift struct {
	b    []byte
	last []int16 // the previous field id of each open struct
}

// begin opens a struct that has no field header of its own: the top
// level, or an element of a list.
func (t *thrift) begin() { t.last = append(t.last, 0) }

// end closes the innermost struct.
func (t *thrift) end() {
	t.b = append(t.b, 0)
	t.last = t.last[:len(t.last)-1]
}

func (t *thrift) field(id int16, typ byte) {
	last := &t.last[len(t.last)-1]
	if d := id - *last; d > 0 && d <= 15 {
		t.b = append(t.b, byte(d)<<4|typ)
	} else {
		t.b = append(t.b, typ)
		t.b = appendZigzag(t.b, int64(id))
	}
	*last = id
}

func (t *thrift) i32(id int16, v int32) {
	t.field(id, thriftI32)
	t.b = appendZigzag(t.b, int64(v))
}

func (t *thrift) i64(id int16, v int64) {
	t.field(id, thriftI64)
	t.b = appendZigzag(t.b, v)
}

func (t *thrift) str(id int16, s string) {
	t.field(id, thriftBinary)
	t.b = binary.AppendUvarint(t.b, uint64(len(s)))
	t.b = append(t.b, s...)
}

func (t *thrift) byteField(id int16, v int8) {
	t.field(id, thriftByte)
	t.b = append(t.b, byte(v))
}

// boolField carries its value in the field header's type.
func (t *thrift) boolField(id int16, v bool) {
	typ := byte(thriftFalse)
	if v {
		typ = thriftTrue
	}
	t.field(id, typ)
}

// beginStruct opens a struct-valued field.
func (t *thrift) beginStruct(id int16) {
	t.field(id, thriftStruct)
	t.begin()
}

// listHeader starts a list-valued field of n elements of type elem; the
// elements follow, without field headers.
func (t *thrift) listHeader(id int16, elem byte, n int) {
	t.field(id, thriftList)
	if n < 15 {
		t.b = append(t.b, byte(n)<<4|elem)
		return
	}
	t.b = append(t.b, 0xf0|elem)
	t.b = binary.AppendUvarint(t.b, uint64(n))
}

// appendZigzag appends v zigzag-encoded (0, −1, 1, −2 … as 0, 1, 2, 3 …)
// as a ULEB128.
func appendZigzag(b []byte, v int64) []byte {
	return binary.AppendUvarint(b, uint64(v<<1^v>>63))
}
