// Package pbwire appends protocol buffer fields in the wire format, the
// little that kinst's pprof and Perfetto writers need: varints and
// length-delimited fields. google.golang.org/protobuf's protowire does
// the same, but its package initialisation reads the running binary
// (for its error messages' randomisation) on every run of kinst.
package pbwire

import "encoding/binary"

// Number is a field number.
type Number uint32

// Wire types.
const (
	varintType = 0
	bytesType  = 2
)

func tag(b []byte, n Number, typ uint64) []byte {
	return binary.AppendUvarint(b, uint64(n)<<3|typ)
}

// AppendVarint appends v as a varint, without a tag: an element of a
// packed repeated field.
func AppendVarint(b []byte, v uint64) []byte { return binary.AppendUvarint(b, v) }

// Varint appends field n holding v.
func Varint(b []byte, n Number, v uint64) []byte {
	return binary.AppendUvarint(tag(b, n, varintType), v)
}

// Bytes appends field n holding v: a string, bytes or a message.
func Bytes(b []byte, n Number, v []byte) []byte {
	b = binary.AppendUvarint(tag(b, n, bytesType), uint64(len(v)))
	return append(b, v...)
}

// String appends field n holding s.
func String(b []byte, n Number, s string) []byte {
	b = binary.AppendUvarint(tag(b, n, bytesType), uint64(len(s)))
	return append(b, s...)
}
