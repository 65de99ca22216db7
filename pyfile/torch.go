package pyfile

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math/big"
	"strings"

	"github.com/nlpodyssey/gopickle/types"
)

// storageDTypes maps torch's storage class names to their element types.
var storageDTypes = map[string]DType{
	"FloatStorage": {Kind: 'f', Size: 4}, "DoubleStorage": {Kind: 'f', Size: 8}, "HalfStorage": {Kind: 'f', Size: 2},
	"BFloat16Storage": {Kind: 'B', Size: 2}, "LongStorage": {Kind: 'i', Size: 8}, "IntStorage": {Kind: 'i', Size: 4},
	"ShortStorage": {Kind: 'i', Size: 2}, "CharStorage": {Kind: 'i', Size: 1}, "ByteStorage": {Kind: 'u', Size: 1},
	"BoolStorage": {Kind: 'b', Size: 1},
}

// storageClass is a torch storage class (torch.LongStorage, …) as named in a persistent id.
type storageClass struct{ dtype DType }

// storage is a torch storage: numel elements of dtype, its bytes filled when read (a view
// shares its root's bytes from offset on).
type storage struct {
	dtype  DType
	numel  int
	raw    []byte
	root   *storage
	offset int
}

func (s *storage) bytes() ([]byte, error) {
	if s.root != nil {
		rb, err := s.root.bytes()
		if err != nil {
			return nil, err
		}
		lo, hi := s.offset*s.dtype.Size, (s.offset+s.numel)*s.dtype.Size
		if lo < 0 || hi > len(rb) {
			return nil, fmt.Errorf("storage view [%d, %d) outside its root of %d elements", s.offset, s.offset+s.numel, s.root.numel)
		}
		return rb[lo:hi], nil
	}
	if s.raw == nil && s.numel > 0 {
		return nil, fmt.Errorf("storage of %d %s elements has no data", s.numel, s.dtype)
	}
	return s.raw, nil
}

// tensorRef is a rebuilt tensor: a strided view of a storage, turned into an Array (and checked
// against its storage) when AsArray first asks, once every storage has its bytes.
type tensorRef struct {
	st             *storage
	offset         int
	size, stride   []int
	materialised   *Array
	materialiseErr error
}

// rebuildTensor is torch._utils._rebuild_tensor_v2(storage, offset, size, stride, requires_grad,
// backward_hooks[, metadata]) and the older _rebuild_tensor(storage, offset, size, stride).
type rebuildTensor struct{}

func (rebuildTensor) Call(args ...any) (any, error) {
	if len(args) < 4 {
		return nil, fmt.Errorf("torch _rebuild_tensor: %d arguments, want at least 4", len(args))
	}
	st, ok := args[0].(*storage)
	if !ok {
		return nil, fmt.Errorf("torch _rebuild_tensor: storage is %T", args[0])
	}
	off, ok := args[1].(int)
	if !ok || off < 0 {
		return nil, fmt.Errorf("torch _rebuild_tensor: storage offset %v", args[1])
	}
	size, err := intTuple(args[2])
	if err != nil {
		return nil, fmt.Errorf("torch _rebuild_tensor size: %w", err)
	}
	stride, err := intTuple(args[3])
	if err != nil {
		return nil, fmt.Errorf("torch _rebuild_tensor stride: %w", err)
	}
	if len(size) != len(stride) {
		return nil, fmt.Errorf("torch _rebuild_tensor: size %v and stride %v differ in rank", size, stride)
	}
	return &tensorRef{st: st, offset: off, size: size, stride: stride}, nil
}

// array gathers the tensor's elements in row-major order, checking every index against the
// storage.
func (t *tensorRef) array() (*Array, error) {
	if t.materialised != nil || t.materialiseErr != nil {
		return t.materialised, t.materialiseErr
	}
	t.materialised, t.materialiseErr = t.gather()
	return t.materialised, t.materialiseErr
}

func (t *tensorRef) gather() (*Array, error) {
	n, err := numel(t.size)
	if err != nil {
		return nil, fmt.Errorf("tensor: %w", err)
	}
	raw, err := t.st.bytes()
	if err != nil {
		return nil, fmt.Errorf("tensor: %w", err)
	}
	if n > t.st.numel {
		return nil, fmt.Errorf("tensor of %d elements over a storage of %d", n, t.st.numel)
	}
	es := t.st.dtype.Size
	hi := t.offset // largest element index touched, plus one
	for d, s := range t.size {
		if t.stride[d] < 0 {
			return nil, fmt.Errorf("tensor: negative stride %v", t.stride)
		}
		if s > 0 {
			hi += (s - 1) * t.stride[d]
		}
	}
	if n > 0 && hi >= t.st.numel {
		return nil, fmt.Errorf("tensor size %v stride %v offset %d reaches past its storage of %d elements", t.size, t.stride, t.offset, t.st.numel)
	}
	out := make([]byte, 0, n*es)
	idx := make([]int, len(t.size))
	for k := 0; k < n; k++ {
		p := t.offset
		for d, i := range idx {
			p += i * t.stride[d]
		}
		out = append(out, raw[p*es:(p+1)*es]...)
		for d := len(idx) - 1; d >= 0; d-- {
			if idx[d]++; idx[d] < t.size[d] {
				break
			}
			idx[d] = 0
		}
	}
	return decode(t.st.dtype, t.size, out)
}

// LoadTorch reads a torch.save file held in b: the zip format (torch ≥ 1.6) or the legacy
// stream format. Tensors are decoded by AsArray.
func LoadTorch(b []byte) (any, error) {
	if bytes.HasPrefix(b, []byte("PK\x03\x04")) {
		return loadTorchZip(b)
	}
	return loadLegacy(b)
}

// legacyMagic is the number torch's legacy format starts with.
var legacyMagic, _ = new(big.Int).SetString("1950a86a20f9469cfc6c", 16)

// loadLegacy reads torch's legacy stream: magic number, protocol version 1001, system info, the
// object (storages as persistent ids), the list of storage keys, then each storage's element
// count and bytes. Storages that views share are read once.
func loadLegacy(b []byte) (any, error) {
	r := &stream{data: b}
	magic, err := r.next(nil)
	if err != nil {
		return nil, fmt.Errorf("torch legacy format: magic number: %w", err)
	}
	if m, ok := magic.(*big.Int); !ok || m.Cmp(legacyMagic) != 0 {
		return nil, fmt.Errorf("torch legacy format: not a torch file (magic number %v)", magic)
	}
	proto, err := r.next(nil)
	if err != nil || proto != 1001 {
		return nil, fmt.Errorf("torch legacy format: protocol version %v, want 1001 (%v)", proto, err)
	}
	info, err := r.next(nil)
	if err != nil {
		return nil, fmt.Errorf("torch legacy format: system info: %w", err)
	}
	bigEndian := false
	if d, ok := info.(*types.Dict); ok {
		if le, ok := d.Get("little_endian"); ok && le == false {
			bigEndian = true
		}
	}
	roots := map[string]*storage{}
	obj, err := r.next(func(id any) (any, error) { return legacyStorage(id, roots, bigEndian) })
	if err != nil {
		return nil, fmt.Errorf("torch legacy format: %w", err)
	}
	keys, err := r.next(nil)
	if err != nil {
		return nil, fmt.Errorf("torch legacy format: storage keys: %w", err)
	}
	list, ok := keys.(*types.List)
	if !ok {
		return nil, fmt.Errorf("torch legacy format: storage keys are %T, want a list", keys)
	}
	for _, k := range *list {
		if err := readLegacyStorage(r, k, roots); err != nil {
			return nil, fmt.Errorf("torch legacy format: %w", err)
		}
	}
	return obj, nil
}

// storageID reads a storage's persistent id ('storage', class, key, location, numel, …), which
// has at least fields entries (6 in the legacy format, with the view metadata; 5 in the zip
// format).
func storageID(id any, fields int, bigEndian bool) (t *types.Tuple, dt DType, key string, n int, err error) {
	t, ok := id.(*types.Tuple)
	if !ok || t.Len() < fields || t.Get(0) != "storage" {
		return nil, dt, "", 0, fmt.Errorf("unsupported persistent id %v", id)
	}
	cls, ok1 := t.Get(1).(storageClass)
	key, ok2 := t.Get(2).(string)
	n, ok3 := t.Get(4).(int)
	if !ok1 || !ok2 || !ok3 || n < 0 {
		return nil, dt, "", 0, fmt.Errorf("malformed storage id %v", id)
	}
	dt = cls.dtype
	dt.BigEndian = bigEndian
	return t, dt, key, n, nil
}

// legacyStorage resolves ('storage', class, root key, location, numel, view metadata).
func legacyStorage(id any, roots map[string]*storage, bigEndian bool) (any, error) {
	t, dt, key, n, err := storageID(id, 6, bigEndian)
	if err != nil {
		return nil, err
	}
	root, seen := roots[key]
	if !seen {
		root = &storage{dtype: dt, numel: n}
		roots[key] = root
	} else if root.dtype != dt || root.numel != n {
		return nil, fmt.Errorf("storage %q declared twice differently", key)
	}
	if t.Get(5) == nil {
		return root, nil
	}
	view, ok := t.Get(5).(*types.Tuple)
	if !ok || view.Len() != 3 {
		return nil, fmt.Errorf("malformed storage view %v", t.Get(5))
	}
	off, ok1 := view.Get(1).(int)
	size, ok2 := view.Get(2).(int)
	if !ok1 || !ok2 || off < 0 || size < 0 {
		return nil, fmt.Errorf("malformed storage view %v", t.Get(5))
	}
	return &storage{dtype: dt, numel: size, root: root, offset: off}, nil
}

// readLegacyStorage takes a storage's element count and bytes from the stream (the bytes stay in
// the stream's slice: no copy).
func readLegacyStorage(r *stream, k any, roots map[string]*storage) error {
	key, ok := k.(string)
	st := roots[key]
	if !ok || st == nil {
		return fmt.Errorf("data for unknown storage %v", k)
	}
	if len(r.data)-r.pos < 8 {
		return fmt.Errorf("storage %q: truncated size", key)
	}
	n := binary.LittleEndian.Uint64(r.data[r.pos:])
	r.pos += 8
	if n != uint64(st.numel) {
		return fmt.Errorf("storage %q holds %d elements, declared %d", key, n, st.numel)
	}
	nb := st.numel * st.dtype.Size
	if nb > len(r.data)-r.pos {
		return fmt.Errorf("storage %q: %d bytes declared, %d remain", key, nb, len(r.data)-r.pos)
	}
	st.raw = r.data[r.pos : r.pos+nb : r.pos+nb]
	r.pos += nb
	return nil
}

// loadFromBytes is torch.storage._load_from_bytes(b): a storage pickled on its own, as torch 1.x
// pickles the storage of every tensor inside a plain pickle (b is a legacy torch.save stream).
type loadFromBytes struct{}

func (loadFromBytes) Call(args ...any) (any, error) {
	if len(args) != 1 {
		return nil, fmt.Errorf("torch _load_from_bytes: %d arguments, want 1", len(args))
	}
	b, ok := args[0].([]byte)
	if !ok {
		return nil, fmt.Errorf("torch _load_from_bytes: argument %T, want bytes", args[0])
	}
	if bytes.HasPrefix(b, []byte("PK\x03\x04")) {
		return nil, fmt.Errorf("torch _load_from_bytes: zip-format storages are not supported")
	}
	v, err := loadLegacy(b)
	if err != nil {
		return nil, fmt.Errorf("torch _load_from_bytes: %w", err)
	}
	st, ok := v.(*storage)
	if !ok {
		return nil, fmt.Errorf("torch _load_from_bytes: got %T, want a storage", v)
	}
	return st, nil
}

// recordLimit bounds what one zip record of an archive of size bytes may expand to: torch
// stores its records uncompressed, so a record many times larger than the whole archive is a
// damaged file or a decompression bomb, refused before it is inflated.
func recordLimit(size int) int64 { return 64*int64(size) + 1<<20 }

// loadTorchZip reads torch's zip format: <prefix>/data.pkl with storages as persistent ids
// ('storage', class, key, location, numel) whose bytes are the records <prefix>/data/<key>.
func loadTorchZip(b []byte) (any, error) {
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return nil, fmt.Errorf("torch zip format: %w", err)
	}
	records := map[string]*zip.File{}
	prefix := ""
	for _, f := range zr.File {
		records[f.Name] = f
		if strings.HasSuffix(f.Name, "/data.pkl") && strings.Count(f.Name, "/") == 1 {
			if prefix != "" {
				return nil, fmt.Errorf("torch zip format: two data.pkl records")
			}
			prefix = strings.TrimSuffix(f.Name, "data.pkl")
		}
	}
	if prefix == "" {
		return nil, fmt.Errorf("torch zip format: no <name>/data.pkl record (TorchScript archives and other zips are not torch.save files)")
	}
	bigEndian := false
	if f := records[prefix+"byteorder"]; f != nil {
		bo, err := readRecord(f, 16)
		if err != nil {
			return nil, fmt.Errorf("torch zip format: %w", err)
		}
		bigEndian = string(bo) == "big"
	}
	pkl, err := readRecord(records[prefix+"data.pkl"], recordLimit(len(b)))
	if err != nil {
		return nil, fmt.Errorf("torch zip format: %w", err)
	}
	loaded := map[string]*storage{}
	persistent := func(id any) (any, error) {
		return zipStorage(id, prefix, records, loaded, bigEndian, recordLimit(len(b)))
	}
	r := &stream{data: pkl}
	v, err := r.next(persistent)
	if err != nil {
		return nil, fmt.Errorf("torch zip format: %s: %w", prefix+"data.pkl", err)
	}
	if rest := len(pkl) - r.pos; rest != 0 {
		return nil, fmt.Errorf("torch zip format: %d bytes after data.pkl's STOP opcode", rest)
	}
	return v, nil
}

func zipStorage(id any, prefix string, records map[string]*zip.File, loaded map[string]*storage, bigEndian bool, limit int64) (any, error) {
	_, dt, key, n, err := storageID(id, 5, bigEndian)
	if err != nil {
		return nil, err
	}
	if st, ok := loaded[key]; ok {
		return st, nil
	}
	f := records[prefix+"data/"+key]
	if f == nil {
		return nil, fmt.Errorf("storage record %sdata/%s missing", prefix, key)
	}
	want := uint64(n) * uint64(dt.Size)
	if f.UncompressedSize64 != want {
		return nil, fmt.Errorf("storage record %s holds %d bytes, %d %s elements need %d", f.Name, f.UncompressedSize64, n, dt, want)
	}
	raw, err := readRecord(f, min(int64(want), limit))
	if err != nil {
		return nil, err
	}
	st := &storage{dtype: dt, numel: n, raw: raw}
	loaded[key] = st
	return st, nil
}

// readRecord reads a zip record of at most limit bytes (its CRC checked by archive/zip).
func readRecord(f *zip.File, limit int64) ([]byte, error) {
	if f.UncompressedSize64 > uint64(limit) {
		return nil, fmt.Errorf("record %s: %d bytes, more than the %d expected", f.Name, f.UncompressedSize64, limit)
	}
	rc, err := f.Open()
	if err != nil {
		return nil, fmt.Errorf("record %s: %w", f.Name, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, int64(f.UncompressedSize64)+1))
	if err != nil {
		return nil, fmt.Errorf("record %s: %w", f.Name, err)
	}
	if uint64(len(b)) != f.UncompressedSize64 {
		return nil, fmt.Errorf("record %s: %d bytes, header says %d", f.Name, len(b), f.UncompressedSize64)
	}
	return b, nil
}
