package runfiles

import (
	"bytes"
	"encoding/binary"
	"encoding/gob"
	"fmt"
	"hash/crc32"
	"os"
)

// The checkpoint container (checkpoint.bin): the magic, the gob encoding of the state, and the
// CRC-32C (Castagnoli) of that encoding, little-endian. What the state holds is the trainer's
// business; the container only checks that the file is whole.
const checkpointMagic = "RWGNNCK1"

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// WriteCheckpoint writes state (gob-encoded) to path atomically in the checkpoint container.
func WriteCheckpoint(path string, state any) error {
	b, err := EncodeCheckpoint(state)
	if err != nil {
		return fmt.Errorf("checkpoint %s: %w", path, err)
	}
	return WriteAtomic(path, b, FilePerm)
}

// EncodeCheckpoint returns the container's bytes for state: magic, gob encoding, CRC-32C.
func EncodeCheckpoint(state any) ([]byte, error) {
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(state); err != nil {
		return nil, fmt.Errorf("encoding: %w", err)
	}
	return WithCheckpointCRC(buf.Bytes()), nil
}

// ReadCheckpoint reads a checkpoint file, verifies its magic and checksum, and decodes the
// state into state (a pointer).
func ReadCheckpoint(path string, state any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	if err := DecodeCheckpoint(b, state); err != nil {
		return fmt.Errorf("checkpoint %s: %w", path, err)
	}
	return nil
}

// DecodeCheckpoint verifies the container's magic and checksum in b and decodes the state into
// state (a pointer).
func DecodeCheckpoint(b []byte, state any) error {
	if len(b) < len(checkpointMagic)+4 || string(b[:len(checkpointMagic)]) != checkpointMagic {
		return fmt.Errorf("not a checkpoint file (bad magic)")
	}
	payload := b[len(checkpointMagic) : len(b)-4]
	if got, want := crc32.Checksum(payload, crcTable), binary.LittleEndian.Uint32(b[len(b)-4:]); got != want {
		return fmt.Errorf("checksum mismatch (file corrupt or truncated)")
	}
	if err := gob.NewDecoder(bytes.NewReader(payload)).Decode(state); err != nil {
		return fmt.Errorf("decoding: %w", err)
	}
	return nil
}

// WithCheckpointCRC wraps a gob payload in the container: magic, payload, CRC-32C of the
// payload (EncodeCheckpoint's last step; tests use it to seal arbitrary contents).
func WithCheckpointCRC(payload []byte) []byte {
	b := append([]byte(checkpointMagic), payload...)
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(payload, crcTable))
}
