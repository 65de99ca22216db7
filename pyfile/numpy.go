package pyfile

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"

	"github.com/nlpodyssey/gopickle/types"
)

// DType is an element type: a kind ('i' signed, 'u' unsigned, 'f' float, 'b' bool, 'B' bfloat16)
// and a size in bytes, stored little- or big-endian.
type DType struct {
	Kind      byte
	Size      int
	BigEndian bool
}

// String is numpy's short name of the type, e.g. "i8" or "f4" ("bf16" for bfloat16).
func (d DType) String() string {
	if d.Kind == 'B' {
		return "bf16"
	}
	return string(d.Kind) + strconv.Itoa(d.Size)
}

func (d DType) valid() bool {
	switch d.Kind {
	case 'i', 'u':
		return d.Size == 1 || d.Size == 2 || d.Size == 4 || d.Size == 8
	case 'f':
		return d.Size == 2 || d.Size == 4 || d.Size == 8
	case 'b':
		return d.Size == 1
	case 'B':
		return d.Size == 2
	}
	return false
}

// Array is a numeric array read from a numpy ndarray, a numpy scalar or a torch tensor, in
// row-major (C) order. Integer and bool elements are in Int, float elements in Float.
type Array struct {
	DType DType
	Shape []int
	Int   []int64
	Float []float64
}

// Len is the number of elements.
func (a *Array) Len() int { return len(a.Int) + len(a.Float) }

// IsFloat reports whether the elements are floats.
func (a *Array) IsFloat() bool { return a.DType.Kind == 'f' || a.DType.Kind == 'B' }

// decode turns n elements of raw data into an Array of the given shape (row-major data).
func decode(dt DType, shape []int, raw []byte) (*Array, error) {
	n, err := numel(shape)
	if err != nil {
		return nil, err
	}
	if !dt.valid() {
		return nil, fmt.Errorf("unsupported element type %s", dt)
	}
	if len(raw) != n*dt.Size {
		return nil, fmt.Errorf("%d bytes of data for %d elements of %s", len(raw), n, dt)
	}
	a := &Array{DType: dt, Shape: append([]int(nil), shape...)}
	var bo binary.ByteOrder = binary.LittleEndian
	if dt.BigEndian {
		bo = binary.BigEndian
	}
	if a.IsFloat() {
		a.Float = make([]float64, n)
		for i := range a.Float {
			a.Float[i] = floatAt(dt, bo, raw[i*dt.Size:])
		}
		return a, nil
	}
	a.Int = make([]int64, n)
	for i := range a.Int {
		a.Int[i] = intAt(dt, bo, raw[i*dt.Size:])
	}
	return a, nil
}

func intAt(dt DType, bo binary.ByteOrder, b []byte) int64 {
	switch {
	case dt.Size == 1 && dt.Kind == 'i':
		return int64(int8(b[0]))
	case dt.Size == 1:
		return int64(b[0])
	case dt.Size == 2 && dt.Kind == 'i':
		return int64(int16(bo.Uint16(b)))
	case dt.Size == 2:
		return int64(bo.Uint16(b))
	case dt.Size == 4 && dt.Kind == 'i':
		return int64(int32(bo.Uint32(b)))
	case dt.Size == 4:
		return int64(bo.Uint32(b))
	}
	return int64(bo.Uint64(b)) // u8 above 2^63 wraps; no benchmark file has one
}

func floatAt(dt DType, bo binary.ByteOrder, b []byte) float64 {
	switch {
	case dt.Kind == 'B':
		return float64(math.Float32frombits(uint32(bo.Uint16(b)) << 16))
	case dt.Size == 2:
		return halfToFloat(bo.Uint16(b))
	case dt.Size == 4:
		return float64(math.Float32frombits(bo.Uint32(b)))
	}
	return math.Float64frombits(bo.Uint64(b))
}

// halfToFloat converts an IEEE 754 binary16 value.
func halfToFloat(h uint16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	exp, frac := int(h>>10&0x1f), float64(h&0x3ff)
	switch exp {
	case 0:
		return sign * math.Ldexp(frac, -24)
	case 0x1f:
		if frac == 0 {
			return sign * math.Inf(1)
		}
		return math.NaN()
	}
	return sign * math.Ldexp(1024+frac, exp-25)
}

// numel is the product of the dimensions, refusing negative ones and overflow past 2^40
// elements (far beyond any benchmark array; a larger count is a damaged file).
func numel(shape []int) (int, error) {
	n := 1
	for _, d := range shape {
		if d < 0 || (d > 0 && n > (1<<40)/d) {
			return 0, fmt.Errorf("invalid shape %v", shape)
		}
		n *= d
	}
	return n, nil
}

// parseDType reads numpy's type string ("i8", "<f4", "|b1", "u1", "?", …).
func parseDType(s string) (DType, error) {
	var dt DType
	if s == "?" || s == "bool" {
		return DType{Kind: 'b', Size: 1}, nil
	}
	if len(s) > 0 && (s[0] == '<' || s[0] == '>' || s[0] == '|' || s[0] == '=') {
		dt.BigEndian = s[0] == '>'
		s = s[1:]
	}
	if len(s) < 2 {
		return dt, fmt.Errorf("unsupported numpy dtype %q", s)
	}
	size, err := strconv.Atoi(s[1:])
	dt.Kind, dt.Size = s[0], size
	if err != nil || !dt.valid() {
		return dt, fmt.Errorf("unsupported numpy dtype %q", s)
	}
	return dt, nil
}

// dtypeClass is numpy.dtype: numpy.dtype(name, align, copy), then BUILD with the byte order.
type dtypeClass struct{}

func (dtypeClass) Call(args ...any) (any, error) {
	if len(args) < 1 {
		return nil, fmt.Errorf("numpy.dtype: no arguments")
	}
	name, ok := args[0].(string)
	if !ok {
		return nil, fmt.Errorf("numpy.dtype: type name %T, want str", args[0])
	}
	dt, err := parseDType(name)
	if err != nil {
		return nil, err
	}
	return &dt, nil
}

// PySetState takes numpy's dtype state (version, byte order, …).
func (d *DType) PySetState(state any) error {
	t, ok := state.(*types.Tuple)
	if !ok || t.Len() < 2 {
		return fmt.Errorf("numpy.dtype state: %T, want a tuple", state)
	}
	order, ok := t.Get(1).(string)
	if !ok {
		return fmt.Errorf("numpy.dtype state: byte order %T", t.Get(1))
	}
	switch order {
	case "<", "|", "=":
		d.BigEndian = false
	case ">":
		d.BigEndian = true
	default:
		return fmt.Errorf("numpy.dtype state: byte order %q", order)
	}
	return nil
}

// ndarrayClass is numpy.ndarray, the class argument of _reconstruct.
type ndarrayClass struct{}

// reconstruct is numpy's _reconstruct(ndarray, (0,), b'b'): an empty array BUILD fills in.
type reconstruct struct{}

func (reconstruct) Call(args ...any) (any, error) {
	if len(args) != 3 {
		return nil, fmt.Errorf("numpy _reconstruct: %d arguments, want 3", len(args))
	}
	if _, ok := args[0].(ndarrayClass); !ok {
		return nil, fmt.Errorf("numpy _reconstruct of %T, want numpy.ndarray", args[0])
	}
	return &ndarray{}, nil
}

// ndarray is an array under construction: BUILD's state is (version, shape, dtype, fortran, data).
type ndarray struct{ a *Array }

// PySetState decodes the array's data.
func (n *ndarray) PySetState(state any) error {
	t, ok := state.(*types.Tuple)
	if !ok || t.Len() != 5 {
		return fmt.Errorf("numpy.ndarray state: %T, want a 5-tuple", state)
	}
	shape, err := intTuple(t.Get(1))
	if err != nil {
		return fmt.Errorf("numpy.ndarray shape: %w", err)
	}
	dt, ok := t.Get(2).(*DType)
	if !ok {
		return fmt.Errorf("numpy.ndarray dtype: %T", t.Get(2))
	}
	fortran, _ := t.Get(3).(bool)
	raw, ok := t.Get(4).([]byte)
	if !ok {
		return fmt.Errorf("numpy.ndarray data: %T (object arrays are not supported)", t.Get(4))
	}
	a, err := decode(*dt, shape, raw)
	if err != nil {
		return fmt.Errorf("numpy.ndarray: %w", err)
	}
	if fortran {
		a.fromColumnMajor()
	}
	n.a = a
	return nil
}

// fromColumnMajor reorders elements decoded in column-major (Fortran) order to row-major, as
// numpy stores a Fortran-ordered array's bytes when pickling it (AQSOL's edge_index).
func (a *Array) fromColumnMajor() {
	if len(a.Shape) < 2 || a.Len() == 0 {
		return
	}
	n := a.Len()
	src := make([]int, n) // src[k]: column-major position of row-major element k
	idx := make([]int, len(a.Shape))
	for k := 0; k < n; k++ {
		p, stride := 0, 1
		for d := 0; d < len(idx); d++ {
			p += idx[d] * stride
			stride *= a.Shape[d]
		}
		src[k] = p
		for d := len(idx) - 1; d >= 0; d-- {
			if idx[d]++; idx[d] < a.Shape[d] {
				break
			}
			idx[d] = 0
		}
	}
	if a.Int != nil {
		out := make([]int64, n)
		for k, p := range src {
			out[k] = a.Int[p]
		}
		a.Int = out
	}
	if a.Float != nil {
		out := make([]float64, n)
		for k, p := range src {
			out[k] = a.Float[p]
		}
		a.Float = out
	}
}

// scalarFunc is numpy's multiarray.scalar(dtype, raw bytes): a numpy scalar such as
// numpy.float64, returned as a 0-dimensional Array.
type scalarFunc struct{}

func (scalarFunc) Call(args ...any) (any, error) {
	if len(args) != 2 {
		return nil, fmt.Errorf("numpy scalar: %d arguments, want 2", len(args))
	}
	dt, ok := args[0].(*DType)
	if !ok {
		return nil, fmt.Errorf("numpy scalar: dtype %T", args[0])
	}
	raw, ok := args[1].([]byte)
	if !ok {
		return nil, fmt.Errorf("numpy scalar: data %T", args[1])
	}
	return decode(*dt, nil, raw)
}

// codecsEncode is _codecs.encode(str, "latin1"): how protocol-2 pickles store bytes.
type codecsEncode struct{}

func (codecsEncode) Call(args ...any) (any, error) {
	if len(args) != 2 {
		return nil, fmt.Errorf("_codecs.encode: %d arguments, want 2", len(args))
	}
	s, ok1 := args[0].(string)
	enc, ok2 := args[1].(string)
	if !ok1 || !ok2 || (enc != "latin1" && enc != "latin-1") {
		return nil, fmt.Errorf("_codecs.encode(%T, %v): only latin1 text is supported", args[0], args[1])
	}
	out := make([]byte, 0, len(s))
	for _, r := range s {
		if r > 0xff {
			return nil, fmt.Errorf("_codecs.encode: rune %U outside latin1", r)
		}
		out = append(out, byte(r))
	}
	return out, nil
}

// emptyBytes is bytes() with no arguments: how protocol-2 pickles store b"".
type emptyBytes struct{}

func (emptyBytes) Call(args ...any) (any, error) {
	if len(args) != 0 {
		return nil, fmt.Errorf("bytes() with %d arguments: only the empty bytes object is supported", len(args))
	}
	return []byte{}, nil
}

// intTuple reads a tuple (or list) of Python ints.
func intTuple(v any) ([]int, error) {
	var items []any
	switch t := v.(type) {
	case *types.Tuple:
		items = *t
	case *types.List:
		items = *t
	default:
		return nil, fmt.Errorf("%T, want a tuple of ints", v)
	}
	out := make([]int, len(items))
	for i, x := range items {
		n, ok := x.(int)
		if !ok {
			return nil, fmt.Errorf("element %d is %T, want int", i, x)
		}
		out[i] = n
	}
	return out, nil
}
