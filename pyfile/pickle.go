// Package pyfile reads the Python files the public benchmark distributions are made of: pickles
// (with numpy arrays and scalars and torch tensors inside) and torch.save files, both the zip
// format of torch ≥ 1.6 and the legacy stream format that plain-pickled torch 1.x tensors embed.
//
// The pickle virtual machine is github.com/nlpodyssey/gopickle's; this package supplies the
// Python classes the benchmark files reference (numpy.ndarray, numpy.dtype, numpy scalars, torch
// storages and tensor rebuilding), checks every length a file declares against the bytes it has
// before anything is allocated, and turns the library's panics into errors, so a damaged or
// hostile file gives an error, never a crash or an allocation the file does not pay for.
//
// Values come back as gopickle's types (*types.List, *types.Tuple, *types.Dict, string, int,
// float64, bool, nil, []byte); numpy arrays and torch tensors are decoded into an *Array by
// AsArray. value.go has the accessors the dataset readers use.
package pyfile

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"
	"sync"

	"github.com/nlpodyssey/gopickle/pickle"
	"github.com/nlpodyssey/gopickle/types"
)

// Load unpickles one object from b, which must hold exactly that pickle (trailing bytes are an
// error). Numpy arrays and torch tensors inside it are decoded when AsArray is asked for them,
// so a reader that keeps a few records of a large file decodes only those.
func Load(b []byte) (any, error) {
	s := &stream{data: b}
	v, err := s.next(nil)
	if err != nil {
		return nil, err
	}
	if rest := len(b) - s.pos; rest != 0 {
		return nil, fmt.Errorf("pickle: %d bytes after the STOP opcode", rest)
	}
	return v, nil
}

// stream is a sequence of pickles in one byte slice (torch's legacy format is five of them and
// then raw storage bytes).
type stream struct {
	data []byte
	pos  int
}

// next unpickles the pickle at the stream's position and moves past its STOP opcode.
// persistent resolves persistent ids (torch storages); nil refuses them.
func (s *stream) next(persistent func(any) (any, error)) (v any, err error) {
	off := s.pos
	n, err := scan(s.data[off:])
	if err != nil {
		return nil, fmt.Errorf("pickle at byte %d: %w", off, err)
	}
	b := s.data[off : off+n]
	if persistent == nil && n <= maxShared {
		if v, ok := sharedPickles.get(b); ok {
			s.pos = off + n
			return v, nil
		}
	}
	defer func() {
		if p := recover(); p != nil {
			v, err = nil, fmt.Errorf("pickle at byte %d: malformed data (%v)", off, firstLine(p))
		}
	}()
	u := pickle.NewUnpickler(bytes.NewReader(b))
	u.FindClass = findClass
	u.PersistentLoad = persistent
	if persistent == nil {
		u.PersistentLoad = func(id any) (any, error) {
			return nil, fmt.Errorf("persistent id %v outside a torch file", id)
		}
	}
	v, err = u.Load()
	if err != nil {
		return nil, fmt.Errorf("pickle at byte %d: %w", off, err)
	}
	if persistent == nil && n <= maxShared {
		sharedPickles.put(b, v)
	}
	s.pos = off + n
	return v, nil
}

// maxShared is the size up to which a pickle's value is kept by its bytes: the small header
// pickles (magic number, protocol, system info) that torch 1.x repeats, byte for byte, in the
// legacy stream of every tensor of a plain pickle. Decoding each of them anew allocates a fresh
// unpickler (and its memo table) every time; ZINC's pickles hold three tensors per molecule.
const maxShared = 256

// sharedPickles holds the values of small pickles by their bytes; they are only read, never
// changed, by this package.
var sharedPickles = &pickleCache{m: map[string]any{}}

type pickleCache struct {
	mu sync.Mutex
	m  map[string]any
}

func (c *pickleCache) get(b []byte) (any, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[string(b)]
	return v, ok
}

func (c *pickleCache) put(b []byte, v any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= 64 { // a stream of ever-new pickles: keep the cache small
		clear(c.m)
	}
	c.m[string(b)] = v
}

// firstLine is the first line of a recovered panic's value.
func firstLine(p any) string {
	s := fmt.Sprint(p)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

// findClass maps the globals a benchmark file references to this package's implementations.
// Anything else is refused by name: the readers need nothing else, and an unknown class is a
// sign of a file of another kind.
func findClass(module, name string) (any, error) {
	full := module + "." + name
	switch full {
	case "numpy.core.multiarray._reconstruct", "numpy._core.multiarray._reconstruct":
		return reconstruct{}, nil
	case "numpy.ndarray":
		return ndarrayClass{}, nil
	case "numpy.dtype":
		return dtypeClass{}, nil
	case "numpy.core.multiarray.scalar", "numpy._core.multiarray.scalar":
		return scalarFunc{}, nil
	case "_codecs.encode":
		return codecsEncode{}, nil
	case "__builtin__.bytes", "builtins.bytes":
		return emptyBytes{}, nil
	case "torch._utils._rebuild_tensor_v2", "torch._utils._rebuild_tensor":
		return rebuildTensor{}, nil
	case "torch.storage._load_from_bytes":
		return loadFromBytes{}, nil
	case "collections.OrderedDict":
		return &types.OrderedDictClass{}, nil
	}
	if module == "torch" {
		if dt, ok := storageDTypes[name]; ok {
			return storageClass{dtype: dt}, nil
		}
	}
	return nil, fmt.Errorf("unsupported Python global %s", full)
}

// argument kinds of the pickle opcodes (Python's pickletools)
const (
	argNone = iota
	argFixed
	argLine
	argTwoLines
	argCount // a little-endian length of width bytes, then that many bytes
)

type opArg struct {
	kind  int
	width int
	sign  bool // the count is signed (a negative one is an error)
}

var opArgs = func() map[byte]opArg {
	m := map[byte]opArg{}
	for _, c := range []byte("(.012N\x88\x89]aelt)\x85\x86\x87}dsu\x8f\x90\x91QRbo\x81\x92\x93\x94\x97\x98") {
		m[c] = opArg{kind: argNone}
	}
	for c, w := range map[byte]int{'J': 4, 'K': 1, 'M': 2, 'G': 8, 'q': 1, 'r': 4, 'h': 1, 'j': 4, 0x80: 1, 0x82: 1, 0x83: 2, 0x84: 4, 0x95: 8} {
		m[c] = opArg{kind: argFixed, width: w}
	}
	for _, c := range "ILFSVgpP" {
		m[byte(c)] = opArg{kind: argLine}
	}
	m['c'] = opArg{kind: argTwoLines}
	m['i'] = opArg{kind: argTwoLines}
	for c, a := range map[byte]opArg{'T': {argCount, 4, true}, 'U': {argCount, 1, false}, 'B': {argCount, 4, false},
		'C': {argCount, 1, false}, 0x8e: {argCount, 8, false}, 'X': {argCount, 4, false}, 0x8c: {argCount, 1, false},
		0x8d: {argCount, 8, false}, 0x96: {argCount, 8, false}, 0x8a: {argCount, 1, false}, 0x8b: {argCount, 4, true}} {
		m[c] = a
	}
	return m
}()

// scan walks the opcodes of the pickle at the start of b up to its STOP and returns its length.
// It fails on an unknown opcode, on a length that runs past the end of b, and on a missing STOP,
// so the unpickler never allocates for bytes the input does not have.
func scan(b []byte) (int, error) {
	i := 0
	for i < len(b) {
		op := b[i]
		a, ok := opArgs[op]
		if !ok {
			return 0, fmt.Errorf("unknown opcode 0x%02x at byte %d", op, i)
		}
		i++
		switch a.kind {
		case argFixed:
			i += a.width
			if op == 0x95 && i <= len(b) { // FRAME: the frame must lie inside the data
				if n := binary.LittleEndian.Uint64(b[i-8 : i]); n > uint64(len(b)-i) {
					return 0, fmt.Errorf("frame at byte %d declares %d bytes, %d remain", i-9, n, len(b)-i)
				}
			}
		case argLine, argTwoLines:
			lines := 1 + a.kind - argLine
			for ; lines > 0; lines-- {
				j := bytes.IndexByte(b[min(i, len(b)):], '\n')
				if j < 0 {
					return 0, fmt.Errorf("opcode 0x%02x at byte %d: unterminated line", op, i-1)
				}
				i += j + 1
			}
		case argCount:
			if i+a.width > len(b) {
				return 0, fmt.Errorf("opcode 0x%02x at byte %d: truncated length", op, i-1)
			}
			n, err := readCount(b[i:i+a.width], a.sign)
			if err != nil {
				return 0, fmt.Errorf("opcode 0x%02x at byte %d: %w", op, i-1, err)
			}
			i += a.width
			if n > uint64(len(b)-i) {
				return 0, fmt.Errorf("opcode 0x%02x at byte %d declares %d bytes, %d remain", op, i-1-a.width, n, len(b)-i)
			}
			i += int(n)
		}
		if i > len(b) {
			return 0, fmt.Errorf("truncated pickle: the argument of opcode 0x%02x runs past the end of the data", op)
		}
		if op == '.' {
			return i, nil
		}
	}
	return 0, fmt.Errorf("no STOP opcode: truncated pickle")
}

func readCount(b []byte, signed bool) (uint64, error) {
	var n uint64
	switch len(b) {
	case 1:
		n = uint64(b[0])
	case 4:
		v := binary.LittleEndian.Uint32(b)
		if signed && int32(v) < 0 {
			return 0, fmt.Errorf("negative length %d", int32(v))
		}
		n = uint64(v)
	case 8:
		n = binary.LittleEndian.Uint64(b)
	}
	return n, nil
}
