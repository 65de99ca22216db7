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
// Src, Dst, Node.Cat, Node.Float, Edge.Cat, Edge.Float, Y, NodeLabel, SP, Adj, Lap, each as a
// uint32 element count followed by 4-byte elements; the widths Node.CatDim, Node.FloatDim,
// Edge.CatDim, Edge.FloatDim, AdjDim, LapDim (uint32) precede the arrays.

// FormatVersion is the version of the file layout.
const FormatVersion = 1

const magic = "RWGCACHE"

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Encode serialises gs under key.
func Encode(key Key, gs []*data.Graph) ([]byte, error) {
	ks := key.String()
	size := 8 + 4 + 4 + len(ks) + 4 + 4
	for _, g := range gs {
		size += 64 + 4*(2*len(g.Src)+len(g.Node.Cat)+len(g.Node.Float)+len(g.Edge.Cat)+len(g.Edge.Float)+
			len(g.Y)+len(g.NodeLabel)+len(g.SP)+len(g.Adj)+len(g.Lap))
	}
	b := make([]byte, 0, size)
	b = append(b, magic...)
	b = binary.LittleEndian.AppendUint32(b, FormatVersion)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(ks)))
	b = append(b, ks...)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(gs)))
	for i, g := range gs {
		if err := g.Validate(); err != nil {
			return nil, fmt.Errorf("cache: graph %d: %w", i, err)
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
		u32(g.LapDim)
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
		floats(g.Lap)
	}
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli)), nil
}

// decoder reads the payload with bounds checks; the first failure sticks.
type decoder struct {
	b   []byte
	off int
	err error
}

func (d *decoder) fail(format string, a ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("at byte %d: %s", d.off, fmt.Sprintf(format, a...))
	}
}

func (d *decoder) u32() uint32 {
	if d.err != nil {
		return 0
	}
	if d.off+4 > len(d.b) {
		d.fail("unexpected end of data")
		return 0
	}
	v := binary.LittleEndian.Uint32(d.b[d.off:])
	d.off += 4
	return v
}

// count reads an element count and checks that that many 4-byte elements remain.
func (d *decoder) count() int {
	n := int(d.u32())
	if d.err == nil && n > (len(d.b)-d.off)/4 {
		d.fail("array of %d elements runs past the end", n)
		return 0
	}
	return n
}

func (d *decoder) ints() []int32 {
	n := d.count()
	if d.err != nil || n == 0 {
		return nil
	}
	xs := make([]int32, n)
	for i := range xs {
		xs[i] = int32(binary.LittleEndian.Uint32(d.b[d.off:]))
		d.off += 4
	}
	return xs
}

func (d *decoder) floats() []float32 {
	n := d.count()
	if d.err != nil || n == 0 {
		return nil
	}
	xs := make([]float32, n)
	for i := range xs {
		xs[i] = math.Float32frombits(binary.LittleEndian.Uint32(d.b[d.off:]))
		d.off += 4
	}
	return xs
}

// Decode checks and parses a cache file's bytes: checksum, magic, format version, key.
func Decode(b []byte, key Key) ([]*data.Graph, error) { return decode(b, key, -1) }

// DecodeFirst is Decode keeping only the first n graphs (all if there are fewer): the whole file
// is checked, only those graphs are parsed.
func DecodeFirst(b []byte, key Key, n int) ([]*data.Graph, error) { return decode(b, key, max(n, 0)) }

// decode parses the first graphs of a cache file's bytes (all with first < 0).
func decode(b []byte, key Key, first int) ([]*data.Graph, error) {
	if len(b) < len(magic)+4+4 {
		return nil, fmt.Errorf("cache file too short (%d bytes): truncated", len(b))
	}
	if string(b[:len(magic)]) != magic {
		return nil, fmt.Errorf("not a cache file (bad magic %q)", b[:len(magic)])
	}
	body := b[:len(b)-4]
	if got, want := crc32.Checksum(body, castagnoli), binary.LittleEndian.Uint32(b[len(b)-4:]); got != want {
		return nil, fmt.Errorf("checksum mismatch (stored %08x, computed %08x): corrupt or truncated", want, got)
	}
	d := &decoder{b: body, off: len(magic)}
	if v := d.u32(); v != FormatVersion {
		return nil, fmt.Errorf("stale cache: file format %d, want %d", v, FormatVersion)
	}
	kl := int(d.u32())
	if d.off+kl > len(body) {
		return nil, fmt.Errorf("key length %d runs past the end", kl)
	}
	if got, want := string(body[d.off:d.off+kl]), key.String(); got != want {
		return nil, fmt.Errorf("stale cache: built for %s, want %s", got, want)
	}
	d.off += kl
	n := int(d.u32())
	if d.err == nil && n > len(body)/16 {
		d.fail("%d graphs cannot fit", n)
	}
	want := n
	if first >= 0 {
		want = min(n, first)
	}
	gs := make([]*data.Graph, 0, max(0, min(want, 1<<20)))
	for i := 0; i < want && d.err == nil; i++ {
		g := &data.Graph{}
		g.N = int(d.u32())
		d.u32() // edge count, implied by Src
		if d.err == nil && d.off >= len(body) {
			d.fail("unexpected end of data")
		}
		if d.err != nil {
			break
		}
		g.HasCLS = body[d.off]&1 != 0
		d.off++
		g.R = int(d.u32())
		g.Label = int32(d.u32())
		g.Node.CatDim, g.Node.FloatDim = int(d.u32()), int(d.u32())
		g.Edge.CatDim, g.Edge.FloatDim = int(d.u32()), int(d.u32())
		g.AdjDim, g.LapDim = int(d.u32()), int(d.u32())
		g.Src, g.Dst = d.ints(), d.ints()
		if g.Src == nil {
			g.Src, g.Dst = []int32{}, []int32{}
		}
		g.Node.Cat, g.Node.Float = d.ints(), d.floats()
		g.Edge.Cat, g.Edge.Float = d.ints(), d.floats()
		g.Y = d.floats()
		g.NodeLabel = d.ints()
		g.SP = d.ints()
		g.Adj = d.floats()
		g.Lap = d.floats()
		if d.err != nil {
			break
		}
		if err := g.Validate(); err != nil {
			return nil, fmt.Errorf("graph %d: %w", i, err)
		}
		gs = append(gs, g)
	}
	if d.err != nil {
		return nil, d.err
	}
	if want == n && d.off != len(body) {
		return nil, fmt.Errorf("%d bytes of trailing data after %d graphs", len(body)-d.off, n)
	}
	return gs, nil
}
