package prep

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"slices"
	"testing"

	"github.com/rewiregnn/rewiregnn/data"
)

// fuzzKey is the key every fuzzed cache file is read against.
var fuzzKey = Key{Dataset: "zinc", Split: "val", R: 2, Encoding: "adj", CLS: true, SelfLoops: true}

// fuzzGraphs are small graphs using every field of the file layout.
func fuzzGraphs() []*data.Graph {
	return []*data.Graph{
		{N: 3, Src: []int32{0, 1, 2}, Dst: []int32{1, 2, 0}, HasCLS: true, R: 2, Label: 1,
			Node: data.Features{CatDim: 1, Cat: []int32{4, 5, 6}, FloatDim: 2, Float: []float32{1, 2, 3, 4, 5, 6}},
			Edge: data.Features{CatDim: 1, Cat: []int32{0, 1, 2}},
			Y:    []float32{0.5}, NodeLabel: []int32{0, 1, 0}, SP: []int32{1, 1, 2},
			AdjDim: 2, Adj: []float32{1, 0, 0, 1, 1, 1}, NodePEDim: 1, NodePE: []float32{-1, 0, 1}},
		{N: 1, Src: []int32{}, Dst: []int32{}, Y: []float32{-2}},
	}
}

// withCRC returns body followed by its CRC-32C, so the fuzzer reaches the parser behind the
// checksum.
func withCRC(body []byte) []byte {
	return binary.LittleEndian.AppendUint32(bytes.Clone(body), crc32.Checksum(body, castagnoli))
}

// FuzzDecode feeds arbitrary cache files to Decode (with a correct checksum when fixCRC is
// set): it must return graphs that validate or an error, never panic or allocate more than the
// file could describe; and what it accepts must encode and decode back to the same bytes.
func FuzzDecode(f *testing.F) {
	good, err := Encode(fuzzKey, fuzzGraphs())
	if err != nil {
		f.Fatal(err)
	}
	empty, err := Encode(fuzzKey, nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good[:len(good)-4], true)
	f.Add(good, false)
	f.Add(empty[:len(empty)-4], true)
	f.Add(good[:40], true)
	f.Add([]byte("RWGCACHE"), true)
	f.Fuzz(func(t *testing.T, b []byte, fixCRC bool) {
		if fixCRC {
			b = withCRC(b)
		}
		gs, err := Decode(b, fuzzKey)
		if err != nil {
			if gs != nil {
				t.Fatal("graphs returned with an error")
			}
			return
		}
		for i, g := range gs {
			if err := g.Validate(); err != nil {
				t.Fatalf("graph %d accepted but invalid: %v", i, err)
			}
		}
		enc, err := Encode(fuzzKey, gs)
		if err != nil {
			t.Fatalf("accepted graphs do not encode: %v", err)
		}
		again, err := Decode(enc, fuzzKey)
		if err != nil {
			t.Fatalf("re-encoded file does not decode: %v", err)
		}
		enc2, err := Encode(fuzzKey, again)
		if err != nil || !bytes.Equal(enc, enc2) {
			t.Fatalf("round trip changed the file (%v)", err)
		}
	})
}

// TestDecodeRoundTrip checks read(write(x)) == x field by field on graphs using every field.
func TestDecodeRoundTrip(t *testing.T) {
	want := fuzzGraphs()
	got, err := Decode(encoded(t, fuzzKey, want), fuzzKey)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d graphs, want %d", len(got), len(want))
	}
	for i := range want {
		w, g := want[i], got[i]
		if g.N != w.N || g.HasCLS != w.HasCLS || g.R != w.R || g.Label != w.Label ||
			!slices.Equal(g.Src, w.Src) || !slices.Equal(g.Dst, w.Dst) || !slices.Equal(g.Node.Cat, w.Node.Cat) ||
			!slices.Equal(g.Node.Float, w.Node.Float) || !slices.Equal(g.Edge.Cat, w.Edge.Cat) ||
			!slices.Equal(g.Y, w.Y) || !slices.Equal(g.NodeLabel, w.NodeLabel) || !slices.Equal(g.SP, w.SP) ||
			!slices.Equal(g.Adj, w.Adj) || !slices.Equal(g.NodePE, w.NodePE) || g.AdjDim != w.AdjDim || g.NodePEDim != w.NodePEDim {
			t.Errorf("graph %d: got %+v, want %+v", i, g, w)
		}
	}
}
