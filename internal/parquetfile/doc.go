// Package parquetfile writes flat tables as Apache Parquet files: the
// runs.parquet of every sweep and the jobs.parquet of a trace study's
// --jobs (docs/cluster.md, docs/metrics.md).
//
// It writes only what those tables need, in the simplest layout every
// Parquet reader accepts: one row group, one uncompressed data page (v1)
// per column, PLAIN values, definition and repetition levels as runs of
// the RLE / bit-packing hybrid, no dictionary, no statistics. Columns are
// int64, double, boolean and string (UTF-8 byte arrays), required or
// optional (null allowed), and lists of int64 in the three-level LIST
// layout. The file footer is the FileMetaData struct in Thrift's compact
// protocol.
//
// Sources: the Parquet format specification and its parquet.thrift
// (github.com/apache/parquet-format: README "File Format", "Nested
// Encoding", Encodings.md for PLAIN and the RLE / bit-packing hybrid,
// LogicalTypes.md for STRING, INT(64, true) and LIST), and Apache
// Thrift's compact protocol specification (thrift/doc/specs/
// thrift-compact-protocol.md). The tests read every file back with an
// independent reader, github.com/parquet-go/parquet-go, which the module
// needs for its tests only.
//
// Why not that library for writing: it and its dependencies (protobuf,
// three compression libraries, a geometry package) were about a hundred
// packages of a cold build of bursar-sweep, for two tables of numbers.
package parquetfile
