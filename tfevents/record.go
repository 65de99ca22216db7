// Package tfevents writes TensorBoard event files: TFRecord framing around serialized
// tensorflow.Event protocol buffers, encoded by hand (no protobuf module). It holds what a
// training run needs: the file-version header, scalar summaries and the hparams plugin's
// summaries, and, to repair a file on resume, the framing's reader and a decoder of the few
// Event fields the writer sets.
//
// It imports only the standard library.
package tfevents

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// castagnoli is the CRC-32C table TFRecord checksums use.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// maskDelta is added to the rotated CRC (TFRecord's masking, so that a CRC of data that itself
// holds CRCs is not trivially related to them).
const maskDelta = 0xa282ead8

// MaskedCRC is TFRecord's masked CRC-32C of b: the CRC rotated right by 15 bits plus maskDelta.
func MaskedCRC(b []byte) uint32 {
	c := crc32.Checksum(b, castagnoli)
	return (c>>15 | c<<17) + maskDelta
}

// headerLen and footerLen frame a record: the length (uint64 little-endian) and its masked CRC
// before the data, the data's masked CRC after it.
const (
	headerLen = 8 + 4
	footerLen = 4
)

// AppendRecord appends data framed as one TFRecord to dst.
func AppendRecord(dst, data []byte) []byte {
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(data)))
	dst = append(dst, n[:]...)
	dst = binary.LittleEndian.AppendUint32(dst, MaskedCRC(n[:]))
	dst = append(dst, data...)
	return binary.LittleEndian.AppendUint32(dst, MaskedCRC(data))
}

// ErrTorn says that a file ends inside a record: a write that did not finish.
var ErrTorn = errors.New("the last record is torn (a write that did not finish)")

// Records splits b into the data of its TFRecords. It stops at the first record that is torn
// (ErrTorn) or whose length or data fails its CRC, and returns the records before it, the offset
// where they end, and the error naming the offset; a nil error means b holds whole records only.
func Records(b []byte) (recs [][]byte, end int, err error) {
	for end < len(b) {
		rest := b[end:]
		if len(rest) < headerLen {
			return recs, end, fmt.Errorf("offset %d: %w", end, ErrTorn)
		}
		if got, want := binary.LittleEndian.Uint32(rest[8:12]), MaskedCRC(rest[:8]); got != want {
			return recs, end, fmt.Errorf("offset %d: the length's CRC is %#08x, want %#08x", end, got, want)
		}
		n, room := binary.LittleEndian.Uint64(rest[:8]), uint64(len(rest)-headerLen)
		if n > room || room-n < footerLen {
			return recs, end, fmt.Errorf("offset %d: %w", end, ErrTorn)
		}
		data := rest[headerLen : headerLen+int(n)]
		if got, want := binary.LittleEndian.Uint32(rest[headerLen+int(n):]), MaskedCRC(data); got != want {
			return recs, end, fmt.Errorf("offset %d: the data's CRC is %#08x, want %#08x", end, got, want)
		}
		recs = append(recs, data)
		end += headerLen + int(n) + footerLen
	}
	return recs, end, nil
}
