package runfiles

import (
	"fmt"
	"testing"
)

// fuzzState stands for the trainer's checkpoint: maps, slices, nested structs, bytes.
type fuzzState struct {
	Name   string
	Values map[string][]float64
	Order  []int32
	Inner  struct{ Step uint64 }
	RNG    []byte
}

// FuzzDecodeCheckpoint feeds arbitrary files to the container reader: errors, never a panic; a
// decoded state re-encodes to a file that decodes to the same state.
func FuzzDecodeCheckpoint(f *testing.F) {
	good, err := EncodeCheckpoint(&fuzzState{Name: "run", Values: map[string][]float64{"w": {1, 2}}, Order: []int32{2, 0, 1}, RNG: []byte{7}})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good, false)
	f.Add(good[len(checkpointMagic):len(good)-4], true)
	f.Add(good[:len(good)-1], false)
	f.Add([]byte(checkpointMagic), false)
	f.Fuzz(func(t *testing.T, b []byte, wrap bool) {
		if wrap {
			b = WithCheckpointCRC(b)
		}
		var s fuzzState
		if err := DecodeCheckpoint(b, &s); err != nil {
			return
		}
		enc, err := EncodeCheckpoint(&s)
		if err != nil {
			t.Fatalf("decoded state does not encode: %v", err)
		}
		var back fuzzState
		if err := DecodeCheckpoint(enc, &back); err != nil {
			t.Fatalf("re-encoded state does not decode: %v", err)
		}
		// fmt prints maps sorted and NaN as NaN, so the comparison holds for every float
		if fmt.Sprintf("%+v", normal(s)) != fmt.Sprintf("%+v", normal(back)) {
			t.Fatalf("round trip changed the state: %+v vs %+v", s, back)
		}
	})
}

// normal maps empty collections to nil: gob does not send empty ones.
func normal(s fuzzState) fuzzState {
	if len(s.Values) == 0 {
		s.Values = nil
	}
	for k, v := range s.Values {
		if len(v) == 0 {
			s.Values[k] = nil
		}
	}
	if len(s.Order) == 0 {
		s.Order = nil
	}
	if len(s.RNG) == 0 {
		s.RNG = nil
	}
	return s
}
