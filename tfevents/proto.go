package tfevents

import (
	"encoding/binary"
	"math"
)

// The protocol buffer wire format, as much as the messages here need: a field is a varint key
// (field number << 3 | wire type) followed by a varint, 8 or 4 little-endian bytes, or a
// varint length and that many bytes. Fields at their proto3 default are left out, except
// members of a oneof, which are always written (they have presence).
const (
	wireVarint = 0
	wire64     = 1
	wireBytes  = 2
	wire32     = 5
)

func appendKey(b []byte, field, wire int) []byte {
	return binary.AppendUvarint(b, uint64(field)<<3|uint64(wire))
}

func appendVarint(b []byte, field int, v uint64) []byte {
	if v == 0 {
		return b
	}
	return binary.AppendUvarint(appendKey(b, field, wireVarint), v)
}

// appendOneofVarint writes a varint even when it is 0 (a oneof member).
func appendOneofVarint(b []byte, field int, v uint64) []byte {
	return binary.AppendUvarint(appendKey(b, field, wireVarint), v)
}

func appendDouble(b []byte, field int, v float64) []byte {
	if v == 0 {
		return b
	}
	return appendOneofDouble(b, field, v)
}

// appendOneofDouble writes a double even when it is 0 (a oneof member).
func appendOneofDouble(b []byte, field int, v float64) []byte {
	return binary.LittleEndian.AppendUint64(appendKey(b, field, wire64), math.Float64bits(v))
}

// appendOneofFloat writes a float even when it is 0 (a oneof member).
func appendOneofFloat(b []byte, field int, v float32) []byte {
	return binary.LittleEndian.AppendUint32(appendKey(b, field, wire32), math.Float32bits(v))
}

// appendBytes writes a length-delimited field (a string, bytes or an embedded message) even
// when it is empty: callers leave out what they do not set.
func appendBytes(b []byte, field int, v []byte) []byte {
	b = binary.AppendUvarint(appendKey(b, field, wireBytes), uint64(len(v)))
	return append(b, v...)
}

func appendString(b []byte, field int, s string) []byte {
	if s == "" {
		return b
	}
	return appendBytes(b, field, []byte(s))
}

func float64frombits(v uint64) float64 { return math.Float64frombits(v) }
