package tfevents

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Info is what a resume needs of an event the writer wrote: its step and wall time, its
// file_version if it is a version event, and the tags of its summary's values.
type Info struct {
	Wall        float64
	Step        int64
	FileVersion string
	Tags        []string
}

// Decode reads the Event fields of Info from a serialized event, skipping any other field.
func Decode(event []byte) (Info, error) {
	var in Info
	err := eachField(event, func(field, wire int, v uint64, b []byte) error {
		switch {
		case field == eventWallTime && wire == wire64:
			in.Wall = float64frombits(v)
		case field == eventStep && wire == wireVarint:
			in.Step = int64(v)
		case field == eventFileVersion && wire == wireBytes:
			in.FileVersion = string(b)
		case field == eventSummary && wire == wireBytes:
			return eachField(b, func(field, wire int, _ uint64, val []byte) error {
				if field != summaryValue || wire != wireBytes {
					return nil
				}
				return eachField(val, func(field, wire int, _ uint64, tag []byte) error {
					if field == valueTag && wire == wireBytes {
						in.Tags = append(in.Tags, string(tag))
					}
					return nil
				})
			})
		}
		return nil
	})
	return in, err
}

var errMalformed = errors.New("malformed protocol buffer")

// eachField calls f with each field of a message: its number, wire type and value (a varint,
// or the bits of a fixed 64- or 32-bit field, in v; the bytes of a length-delimited one in b).
func eachField(msg []byte, f func(field, wire int, v uint64, b []byte) error) error {
	for off := 0; off < len(msg); {
		key, n := binary.Uvarint(msg[off:])
		if n <= 0 {
			return fmt.Errorf("offset %d: %w", off, errMalformed)
		}
		off += n
		field, wire := int(key>>3), int(key&7)
		var v uint64
		var b []byte
		switch wire {
		case wireVarint:
			if v, n = binary.Uvarint(msg[off:]); n <= 0 {
				return fmt.Errorf("offset %d: %w", off, errMalformed)
			}
			off += n
		case wire64:
			if len(msg)-off < 8 {
				return fmt.Errorf("offset %d: %w", off, errMalformed)
			}
			v, off = binary.LittleEndian.Uint64(msg[off:]), off+8
		case wire32:
			if len(msg)-off < 4 {
				return fmt.Errorf("offset %d: %w", off, errMalformed)
			}
			v, off = uint64(binary.LittleEndian.Uint32(msg[off:])), off+4
		case wireBytes:
			l, n := binary.Uvarint(msg[off:])
			if n <= 0 || l > uint64(len(msg)-off-n) {
				return fmt.Errorf("offset %d: %w", off, errMalformed)
			}
			off += n
			b, off = msg[off:off+int(l)], off+int(l)
		default:
			return fmt.Errorf("offset %d: wire type %d: %w", off, wire, errMalformed)
		}
		if err := f(field, wire, v, b); err != nil {
			return err
		}
	}
	return nil
}
