package prep

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"

	"github.com/rewiregnn/rewiregnn/data"
	"github.com/rewiregnn/rewiregnn/runfiles"
)

// A cache file is read and written one graph at a time, so that neither side ever holds the
// file's bytes and its graphs together: a split is built in chunks of ChunkGraphs graphs and each
// chunk is written and dropped before the next is built (BuildFile, Sizes), and a reader
// (Reader) decodes records as it goes and checks the CRC-32C when it reaches the end.

// ChunkGraphs is how many graphs are rewired and encoded at once when a split is streamed: the
// rewired copies of a dense split (MNIST at r = 4 holds thousands of edges per graph) are
// dropped after each chunk (hops measures densities in chunks of the same size).
const ChunkGraphs = 512

// Stream rewires and encodes gs as key says (Build), chunk by chunk, and hands each result to
// emit in input order; a chunk's graphs are dropped once emitted unless emit keeps them.
func Stream(gs []*data.Graph, spec *data.Spec, key Key, workers int, emit func(i int, g *data.Graph) error) error {
	for lo := 0; lo < len(gs); lo += ChunkGraphs {
		out, err := Build(gs[lo:min(lo+ChunkGraphs, len(gs))], spec, key, workers)
		if err != nil {
			return err
		}
		for j, g := range out {
			if err := emit(lo+j, g); err != nil {
				return err
			}
		}
	}
	return nil
}

// Writer writes a cache file graph by graph: Add each of the count graphs the header announced,
// then Close. The bytes go to a temporary file in the target's folder, which Close syncs and
// renames over the target (runfiles.WriteAtomicFunc); the file is the one Encode would make.
type Writer struct {
	w     *bufio.Writer
	n     int64 // bytes written
	crc   uint32
	count int
	added int
	buf   []byte
	err   error
}

func (w *Writer) write(b []byte) {
	if w.err != nil {
		return
	}
	w.crc = crc32.Update(w.crc, castagnoli, b)
	_, w.err = w.w.Write(b)
	w.n += int64(len(b))
}

// Add appends g's record.
func (w *Writer) Add(g *data.Graph) error {
	if w.err != nil {
		return w.err
	}
	if w.added == w.count {
		return fmt.Errorf("cache: graph %d of a file announced with %d", w.added, w.count)
	}
	b, err := appendGraph(w.buf[:0], g)
	if err != nil {
		return fmt.Errorf("cache: graph %d: %w", w.added, err)
	}
	w.buf = b
	w.write(b)
	w.added++
	return w.err
}

// WriteGraphs writes path atomically from fill, which must Add exactly count graphs. On any
// failure path is left as it was.
func WriteGraphs(path string, key Key, count int, fill func(w *Writer) error) error {
	err := runfiles.WriteAtomicFunc(path, 0o600, func(f io.Writer) error {
		w := &Writer{w: bufio.NewWriterSize(f, 1<<20), count: count}
		w.write(appendHeader(nil, key.String(), count))
		if err := fill(w); err != nil {
			return err
		}
		if w.err == nil && w.added != count {
			return fmt.Errorf("cache: %d graphs written, %d announced", w.added, count)
		}
		w.write(binary.LittleEndian.AppendUint32(nil, w.crc))
		if w.err != nil {
			return w.err
		}
		return w.w.Flush()
	})
	if err != nil {
		return fmt.Errorf("cache: %w", err)
	}
	return nil
}

// Reader reads a cache file's graphs in order, checking as it goes: the header (magic, format
// version, key, graph count) when opened, each record's bounds and graph as it is read, and the
// CRC-32C once the last graph is read. A record that fails a check in a file whose checksum is
// also wrong is reported as the checksum mismatch (a corrupt or truncated file).
type Reader struct {
	Count int // graphs in the file
	r     *bufio.Reader
	c     io.Closer
	crc   uint32
	left  int64 // body bytes not read yet (the 4-byte checksum excluded)
	read  int
	scr   []byte
	err   error
}

// OpenReader opens the cache file at path for key; errors name the file and wrap
// os.ErrNotExist when it is missing.
func OpenReader(path string, key Key) (*Reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	r, err := newReader(bufio.NewReaderSize(f, 1<<20), fi.Size(), key)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	r.c = f
	return r, nil
}

// newReader reads the header of a cache file of size bytes from src.
func newReader(src *bufio.Reader, size int64, key Key) (*Reader, error) {
	if size < int64(len(magic)+4+4) {
		return nil, fmt.Errorf("cache file too short (%d bytes): truncated", size)
	}
	r := &Reader{r: src, left: size - 4}
	if m := r.take(len(magic)); r.err != nil || string(m) != magic {
		return nil, fmt.Errorf("not a cache file (bad magic %q)", m)
	}
	if v := r.u32(); r.err == nil && v != FormatVersion {
		return nil, r.corrupt(fmt.Errorf("stale cache: file format %d, want %d", v, FormatVersion))
	}
	kl := int64(r.u32())
	if r.err == nil && kl > r.left {
		return nil, r.corrupt(fmt.Errorf("key length %d runs past the end", kl))
	}
	if got := string(r.take(int(kl))); r.err == nil && got != key.String() {
		return nil, r.corrupt(fmt.Errorf("stale cache: built for %s, want %s", got, key.String()))
	}
	r.Count = int(r.u32())
	if r.err == nil && int64(r.Count) > r.left/16 {
		return nil, r.corrupt(fmt.Errorf("%d graphs cannot fit", r.Count))
	}
	if r.err != nil {
		return nil, r.corrupt(r.err)
	}
	return r, nil
}

// corrupt returns the checksum mismatch if the file's checksum fails (reading the rest of it to
// know), else err: a damaged file is called damaged whatever part of it the damage hit first.
func (r *Reader) corrupt(err error) error {
	if cerr := r.finish(); cerr != nil {
		return cerr
	}
	return err
}

// finish reads what is left of the body and checks the checksum.
func (r *Reader) finish() error {
	r.err = nil
	for r.left > 0 {
		n := int(min(r.left, 1<<20))
		if r.take(n); r.err != nil {
			return fmt.Errorf("cache file truncated: %w", r.err)
		}
	}
	var tail [4]byte
	if _, err := io.ReadFull(r.r, tail[:]); err != nil {
		return fmt.Errorf("cache file truncated: %w", err)
	}
	if want := binary.LittleEndian.Uint32(tail[:]); r.crc != want {
		return fmt.Errorf("checksum mismatch (stored %08x, computed %08x): corrupt or truncated", want, r.crc)
	}
	if n, _ := r.r.Read(tail[:1]); n != 0 {
		return fmt.Errorf("trailing bytes after the checksum")
	}
	return nil
}

// take reads n body bytes (into a scratch buffer valid until the next call).
func (r *Reader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if int64(n) > r.left {
		r.err = fmt.Errorf("unexpected end of data")
		return nil
	}
	if cap(r.scr) < n {
		r.scr = make([]byte, n)
	}
	b := r.scr[:n]
	if _, err := io.ReadFull(r.r, b); err != nil {
		r.err = fmt.Errorf("reading: %w", err)
		return nil
	}
	r.left -= int64(n)
	r.crc = crc32.Update(r.crc, castagnoli, b)
	return b
}

func (r *Reader) u32() uint32 {
	b := r.take(4)
	if b == nil {
		return 0
	}
	return binary.LittleEndian.Uint32(b)
}

// count reads an element count and checks that that many 4-byte elements remain.
func (r *Reader) count() int {
	n := int64(r.u32())
	if r.err == nil && n > r.left/4 {
		r.err = fmt.Errorf("array of %d elements runs past the end", n)
		return 0
	}
	return int(n)
}

// array reads an array's element count and its 4-byte elements, returned as bytes (scratch,
// valid until the next read).
func (r *Reader) array() []byte { return r.take(4 * r.count()) }

// words converts an array's bytes to its elements (nil when empty).
func words[T int32 | float32](b []byte, conv func(uint32) T) []T {
	if len(b) == 0 {
		return nil
	}
	xs := make([]T, len(b)/4)
	for i := range xs {
		xs[i] = conv(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return xs
}

func (r *Reader) ints() []int32 { return words(r.array(), func(u uint32) int32 { return int32(u) }) }

func (r *Reader) floats() []float32 { return words(r.array(), math.Float32frombits) }

// recordArrays is the number of arrays in a graph record.
const recordArrays = 11

// head reads a record's fixed fields into g, the arrays left to read.
func (r *Reader) head(g *data.Graph) {
	g.N = int(r.u32())
	r.u32() // edge count, implied by Src
	if f := r.take(1); f != nil {
		g.HasCLS = f[0]&1 != 0
	}
	g.R = int(r.u32())
	g.Label = int32(r.u32())
	g.Node.CatDim, g.Node.FloatDim = int(r.u32()), int(r.u32())
	g.Edge.CatDim, g.Edge.FloatDim = int(r.u32()), int(r.u32())
	g.AdjDim, g.NodePEDim = int(r.u32()), int(r.u32())
}

// atEnd is io.EOF once every graph is read and the checksum holds (or the error that check
// found), nil while graphs remain.
func (r *Reader) atEnd() error {
	if r.read < r.Count {
		return nil
	}
	if err := r.finish(); err != nil {
		return err
	}
	return io.EOF
}

// Next returns the next graph; after the last, io.EOF once the checksum has been checked (or
// the error that check found).
func (r *Reader) Next() (*data.Graph, error) {
	if err := r.atEnd(); err != nil {
		return nil, err
	}
	g := &data.Graph{}
	r.head(g)
	g.Src, g.Dst = r.ints(), r.ints()
	if g.Src == nil {
		g.Src, g.Dst = []int32{}, []int32{}
	}
	g.Node.Cat, g.Node.Float = r.ints(), r.floats()
	g.Edge.Cat, g.Edge.Float = r.ints(), r.floats()
	g.Y = r.floats()
	g.NodeLabel = r.ints()
	g.SP = r.ints()
	g.Adj = r.floats()
	g.NodePE = r.floats()
	if r.err != nil {
		return nil, r.corrupt(fmt.Errorf("graph %d: %w", r.read, r.err))
	}
	if err := g.Validate(); err != nil {
		return nil, r.corrupt(fmt.Errorf("graph %d: %w", r.read, err))
	}
	r.read++
	return g, nil
}

// NextSize is Next for a memory plan: the next graph's GraphSize (as Next's graph would have
// it), its arrays read past (and checksummed) but neither converted nor kept, nor the graph
// validated (the run that loads it does).
func (r *Reader) NextSize() (GraphSize, error) {
	if err := r.atEnd(); err != nil {
		return GraphSize{}, err
	}
	var g data.Graph
	r.head(&g)
	sz := GraphSize{N: g.N, E: len(r.array()) / 4}
	n := sz.E
	for range recordArrays - 1 {
		n += len(r.array()) / 4
	}
	if r.err != nil {
		return GraphSize{}, r.corrupt(fmt.Errorf("graph %d: %w", r.read, r.err))
	}
	sz.Bytes = 4*int64(n) + graphOverhead
	r.read++
	return sz, nil
}

// Close releases the file.
func (r *Reader) Close() error {
	if r.c == nil {
		return nil
	}
	return r.c.Close()
}

// readGraphs reads the first n graphs (all for n < 0) and checks the whole file.
func readGraphs(r *Reader, n int) ([]*data.Graph, error) {
	want := r.Count
	if n >= 0 {
		want = min(n, r.Count)
	}
	gs := make([]*data.Graph, 0, min(want, 1<<20))
	for len(gs) < want {
		g, err := r.Next()
		if err != nil {
			return nil, err
		}
		gs = append(gs, g)
	}
	if len(gs) < r.Count {
		if err := r.finish(); err != nil {
			return nil, err
		}
		return gs, nil
	}
	if _, err := r.Next(); err != io.EOF {
		return nil, err
	}
	return gs, nil
}

// decodeBytes is Reader over a file's bytes held in memory.
func decodeBytes(b []byte, key Key, n int) ([]*data.Graph, error) {
	r, err := newReader(bufio.NewReader(bytes.NewReader(b)), int64(len(b)), key)
	if err != nil {
		return nil, err
	}
	return readGraphs(r, n)
}

// GraphSize is what a memory plan needs of a graph: its node and edge counts and the bytes its
// arrays take.
type GraphSize struct {
	N, E  int
	Bytes int64
}

// SizeOf is g's GraphSize as g holds its arrays (by capacity, as allocated).
func SizeOf(g *data.Graph) GraphSize { return sizeBy(g, func(_, c int) int { return c }) }

// sizeRead is the GraphSize g has once read back from a cache file (Reader allocates each array
// at its length).
func sizeRead(g *data.Graph) GraphSize { return sizeBy(g, func(l, _ int) int { return l }) }

// sizeBy is g's GraphSize counting each of its recordArrays arrays as of(len, cap) elements.
func sizeBy(g *data.Graph, of func(l, c int) int) GraphSize {
	words := of(len(g.Src), cap(g.Src)) + of(len(g.Dst), cap(g.Dst)) +
		of(len(g.Node.Cat), cap(g.Node.Cat)) + of(len(g.Node.Float), cap(g.Node.Float)) +
		of(len(g.Edge.Cat), cap(g.Edge.Cat)) + of(len(g.Edge.Float), cap(g.Edge.Float)) +
		of(len(g.Y), cap(g.Y)) + of(len(g.NodeLabel), cap(g.NodeLabel)) + of(len(g.SP), cap(g.SP)) +
		of(len(g.Adj), cap(g.Adj)) + of(len(g.NodePE), cap(g.NodePE))
	return GraphSize{N: g.N, E: g.NumEdges(), Bytes: 4*int64(words) + graphOverhead}
}

// graphOverhead is a graph's struct and slice headers.
const graphOverhead = 200
