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
	var buf bytes.Buffer
	buf.WriteString(checkpointMagic)
	if err := gob.NewEncoder(&buf).Encode(state); err != nil {
		return fmt.Errorf("checkpoint %s: encoding: %w", path, err)
	}
	sum := crc32.Checksum(buf.Bytes()[len(checkpointMagic):], crcTable)
	buf.Write(binary.LittleEndian.AppendUint32(nil, sum))
	return WriteAtomic(path, buf.Bytes(), filePerm)
}

// ReadCheckpoint reads a checkpoint file, verifies its magic and checksum, and decodes the
// state into state (a pointer).
func ReadCheckpoint(path string, state any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	if len(b) < len(checkpointMagic)+4 || string(b[:len(checkpointMagic)]) != checkpointMagic {
		return fmt.Errorf("checkpoint %s: not a checkpoint file (bad magic)", path)
	}
	payload := b[len(checkpointMagic) : len(b)-4]
	if got, want := crc32.Checksum(payload, crcTable), binary.LittleEndian.Uint32(b[len(b)-4:]); got != want {
		return fmt.Errorf("checkpoint %s: checksum mismatch (file corrupt or truncated)", path)
	}
	if err := gob.NewDecoder(bytes.NewReader(payload)).Decode(state); err != nil {
		return fmt.Errorf("checkpoint %s: decoding: %w", path, err)
	}
	return nil
}
