package prep

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"

	"github.com/rewiregnn/rewiregnn/data"
)

// File layout, all integers little-endian:
//
//	magic      8 bytes  "RWGCACHE"
//	format     uint32   FormatVersion
//	key        uint32 length + bytes (Key.String(), which includes the preprocessing version)
//	count      uint32   number of graphs
//	graphs     count × graph record
//	crc        uint32   CRC-32C (Castagnoli) of every byte before it
//
// graph record: N, E (int32); flags (uint8: bit 0 HasCLS); R, Label (int32); then the arrays
// Src, Dst, Node.Cat, Node.Float, Edge.Cat, Edge.Float, Y, NodeLabel, SP, Adj, NodePE, each as a
// uint32 element count followed by 4-byte elements; the widths Node.CatDim, Node.FloatDim,
// Edge.CatDim, Edge.FloatDim, AdjDim, NodePEDim (uint32) precede the arrays.

// FormatVersion is the version of the file layout.
const FormatVersion = 1

const magic = "RWGCACHE"

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Encode serialises gs under key (the whole file in memory: the cache itself writes through
// Writer, graph by graph).
func Encode(key Key, gs []*data.Graph) ([]byte, error) {
	ks := key.String()
	size := 8 + 4 + 4 + len(ks) + 4 + 4
	for _, g := range gs {
		size += recordBytes(g)
	}
	b := appendHeader(make([]byte, 0, size), ks, len(gs))
	for i, g := range gs {
		var err error
		if b, err = appendGraph(b, g); err != nil {
			return nil, fmt.Errorf("cache: graph %d: %w", i, err)
		}
	}
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli)), nil
}

// recordBytes is the size of g's record in a cache file (a bound: the flags byte is counted as 4).
func recordBytes(g *data.Graph) int {
	return 64 + 4*(2*len(g.Src)+len(g.Node.Cat)+len(g.Node.Float)+len(g.Edge.Cat)+len(g.Edge.Float)+
		len(g.Y)+len(g.NodeLabel)+len(g.SP)+len(g.Adj)+len(g.NodePE))
}

// appendHeader appends the file's header: magic, format version, key and graph count.
func appendHeader(b []byte, ks string, count int) []byte {
	b = append(b, magic...)
	b = binary.LittleEndian.AppendUint32(b, FormatVersion)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(ks)))
	b = append(b, ks...)
	return binary.LittleEndian.AppendUint32(b, uint32(count))
}

// appendGraph appends g's record (after checking g).
func appendGraph(b []byte, g *data.Graph) ([]byte, error) {
	if err := g.Validate(); err != nil {
		return b, err
	}
	u32 := func(v int) { b = binary.LittleEndian.AppendUint32(b, uint32(v)) }
	ints := func(xs []int32) {
		u32(len(xs))
		for _, x := range xs {
			b = binary.LittleEndian.AppendUint32(b, uint32(x))
		}
	}
	floats := func(xs []float32) {
		u32(len(xs))
		for _, x := range xs {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
		}
	}
	u32(g.N)
	u32(len(g.Src))
	var flags byte
	if g.HasCLS {
		flags |= 1
	}
	b = append(b, flags)
	u32(g.R)
	u32(int(g.Label))
	u32(g.Node.CatDim)
	u32(g.Node.FloatDim)
	u32(g.Edge.CatDim)
	u32(g.Edge.FloatDim)
	u32(g.AdjDim)
	u32(g.NodePEDim)
	ints(g.Src)
	ints(g.Dst)
	ints(g.Node.Cat)
	floats(g.Node.Float)
	ints(g.Edge.Cat)
	floats(g.Edge.Float)
	floats(g.Y)
	ints(g.NodeLabel)
	ints(g.SP)
	floats(g.Adj)
	floats(g.NodePE)
	return b, nil
}

// Decode checks and parses a cache file's bytes: magic, format version, key, every record and
// the checksum.
func Decode(b []byte, key Key) ([]*data.Graph, error) { return decodeBytes(b, key, -1) }

// DecodeFirst is Decode keeping only the first n graphs (all if there are fewer): the whole file
// is checked, only those graphs are parsed.
func DecodeFirst(b []byte, key Key, n int) ([]*data.Graph, error) {
	return decodeBytes(b, key, max(n, 0))
}
