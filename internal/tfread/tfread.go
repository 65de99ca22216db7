// Package tfread reads TensorBoard event files for tests, independently of package tfevents
// (it shares no code with the writer): the TFRecord framing with both CRC-32C checks, the CRC
// itself computed bit by bit from its definition, and the Event, Summary and Summary.Value
// messages decoded by hand from the protocol buffer wire format.
package tfread

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Event is a decoded tensorflow.Event (the fields the trainer writes).
type Event struct {
	Wall        float64 // field 1, double
	Step        int64   // field 2, int64
	FileVersion string  // field 3
	Values      []Value // field 5, Summary.value (field 1)
}

// Value is a Summary.Value: tag (1), simple_value (2, float) or none, and the plugin_data of
// its metadata (9 → plugin_data 1 → plugin_name 1, content 2).
type Value struct {
	Tag       string
	HasSimple bool
	Simple    float32
	Plugin    string
	Content   []byte
}

// Scalar is one simple_value with its step.
type Scalar struct {
	Tag   string
	Step  int64
	Value float32
}

// ErrTorn: the data ends inside a record.
var ErrTorn = errors.New("torn record")

// crc32c is the CRC-32C (Castagnoli) of b by its definition: reflected polynomial 0x82F63B78,
// initial value and final xor 0xFFFFFFFF, one bit at a time.
func crc32c(b []byte) uint32 {
	c := uint32(0xFFFFFFFF)
	for _, x := range b {
		c ^= uint32(x)
		for i := 0; i < 8; i++ {
			if c&1 != 0 {
				c = c>>1 ^ 0x82F63B78
			} else {
				c >>= 1
			}
		}
	}
	return ^c
}

// Masked is TFRecord's masked CRC: ((crc >> 15) | (crc << 17)) + 0xa282ead8.
func Masked(b []byte) uint32 {
	c := crc32c(b)
	return ((c >> 15) | (c << 17)) + 0xa282ead8
}

func le64(b []byte) uint64 {
	var v uint64
	for i := 7; i >= 0; i-- {
		v = v<<8 | uint64(b[i])
	}
	return v
}

func le32(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

// Parse decodes the records of b. It returns the events of the whole records before the first
// torn or failing one and an error naming it (ErrTorn for a record cut short).
func Parse(b []byte) ([]Event, error) {
	var evs []Event
	for off := 0; off < len(b); {
		if len(b)-off < 12 {
			return evs, fmt.Errorf("offset %d: %w", off, ErrTorn)
		}
		if Masked(b[off:off+8]) != le32(b[off+8:]) {
			return evs, fmt.Errorf("offset %d: length CRC mismatch", off)
		}
		n, room := le64(b[off:]), uint64(len(b)-off-12)
		if n > room || room-n < 4 {
			return evs, fmt.Errorf("offset %d: %w", off, ErrTorn)
		}
		data := b[off+12 : off+12+int(n)]
		if Masked(data) != le32(b[off+12+int(n):]) {
			return evs, fmt.Errorf("offset %d: data CRC mismatch", off)
		}
		ev, err := decodeEvent(data)
		if err != nil {
			return evs, fmt.Errorf("offset %d: %w", off, err)
		}
		evs = append(evs, ev)
		off += 16 + int(n)
	}
	return evs, nil
}

// ReadFile parses one event file; any torn or failing record is an error.
func ReadFile(path string) ([]Event, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	evs, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return evs, nil
}

// Files are the event files of dir (names holding "tfevents", not hidden), sorted by name.
func Files(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if n := e.Name(); !e.IsDir() && strings.Contains(n, "tfevents") && !strings.HasPrefix(n, ".") {
			out = append(out, filepath.Join(dir, n))
		}
	}
	sort.Strings(out)
	return out, nil
}

// ReadDir parses every event file of dir in name order; each must start with a version event.
func ReadDir(dir string) ([]Event, error) {
	files, err := Files(dir)
	if err != nil {
		return nil, err
	}
	var all []Event
	for _, f := range files {
		evs, err := ReadFile(f)
		if err != nil {
			return nil, err
		}
		if len(evs) == 0 || evs[0].FileVersion != "brain.Event:2" {
			return nil, fmt.Errorf("%s: the first event is not the file_version brain.Event:2", f)
		}
		all = append(all, evs...)
	}
	return all, nil
}

// Scalars lists the simple values of evs in order.
func Scalars(evs []Event) []Scalar {
	var out []Scalar
	for _, e := range evs {
		for _, v := range e.Values {
			if v.HasSimple {
				out = append(out, Scalar{Tag: v.Tag, Step: e.Step, Value: v.Simple})
			}
		}
	}
	return out
}

// Field is one decoded protocol buffer field.
type Field struct {
	Num   int
	Wire  int
	Int   uint64 // varint, or the bits of a fixed64 / fixed32
	Bytes []byte // length-delimited
}

// Fields decodes a message into its fields in order.
func Fields(msg []byte) ([]Field, error) {
	var out []Field
	for i := 0; i < len(msg); {
		key, n := uvarint(msg[i:])
		if n == 0 {
			return nil, errors.New("bad key varint")
		}
		i += n
		f := Field{Num: int(key >> 3), Wire: int(key & 7)}
		switch f.Wire {
		case 0:
			if f.Int, n = uvarint(msg[i:]); n == 0 {
				return nil, errors.New("bad varint")
			}
			i += n
		case 1:
			if len(msg)-i < 8 {
				return nil, errors.New("short fixed64")
			}
			f.Int, i = le64(msg[i:]), i+8
		case 5:
			if len(msg)-i < 4 {
				return nil, errors.New("short fixed32")
			}
			f.Int, i = uint64(le32(msg[i:])), i+4
		case 2:
			l, n := uvarint(msg[i:])
			if n == 0 || l > uint64(len(msg)-i-n) {
				return nil, errors.New("bad length")
			}
			i += n
			f.Bytes, i = msg[i:i+int(l)], i+int(l)
		default:
			return nil, fmt.Errorf("wire type %d", f.Wire)
		}
		out = append(out, f)
	}
	return out, nil
}

func uvarint(b []byte) (uint64, int) {
	var v uint64
	for i := 0; i < len(b) && i < 10; i++ {
		v |= uint64(b[i]&0x7f) << (7 * i)
		if b[i] < 0x80 {
			return v, i + 1
		}
	}
	return 0, 0
}

func decodeEvent(b []byte) (Event, error) {
	var e Event
	fs, err := Fields(b)
	if err != nil {
		return e, err
	}
	for _, f := range fs {
		switch {
		case f.Num == 1 && f.Wire == 1:
			e.Wall = math.Float64frombits(f.Int)
		case f.Num == 2 && f.Wire == 0:
			e.Step = int64(f.Int)
		case f.Num == 3 && f.Wire == 2:
			e.FileVersion = string(f.Bytes)
		case f.Num == 5 && f.Wire == 2:
			if e.Values, err = decodeSummary(f.Bytes); err != nil {
				return e, err
			}
		}
	}
	return e, nil
}

func decodeSummary(b []byte) ([]Value, error) {
	fs, err := Fields(b)
	if err != nil {
		return nil, err
	}
	var vals []Value
	for _, f := range fs {
		if f.Num != 1 || f.Wire != 2 {
			continue
		}
		vf, err := Fields(f.Bytes)
		if err != nil {
			return nil, err
		}
		var v Value
		for _, x := range vf {
			switch {
			case x.Num == 1 && x.Wire == 2:
				v.Tag = string(x.Bytes)
			case x.Num == 2 && x.Wire == 5:
				v.HasSimple, v.Simple = true, math.Float32frombits(uint32(x.Int))
			case x.Num == 9 && x.Wire == 2:
				if v.Plugin, v.Content, err = decodeMetadata(x.Bytes); err != nil {
					return nil, err
				}
			}
		}
		vals = append(vals, v)
	}
	return vals, nil
}

func decodeMetadata(b []byte) (string, []byte, error) {
	fs, err := Fields(b)
	if err != nil {
		return "", nil, err
	}
	for _, f := range fs {
		if f.Num != 1 || f.Wire != 2 {
			continue
		}
		pd, err := Fields(f.Bytes)
		if err != nil {
			return "", nil, err
		}
		var name string
		var content []byte
		for _, x := range pd {
			switch x.Num {
			case 1:
				name = string(x.Bytes)
			case 2:
				content = x.Bytes
			}
		}
		return name, content, nil
	}
	return "", nil, nil
}
