package kernels

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/rewiregnn/rewiregnn/cuda/cudalib"
	"github.com/rewiregnn/rewiregnn/runfiles"
)

// EnvCache overrides the kernel cache folder; "off" disables the cache.
const EnvCache = "REWIREGNN_KERNEL_CACHE"

// Cache keeps compiled kernels (PTX or device code) on disk, so NVRTC runs once per
// kernel source, target architecture and NVRTC version. Entries are written atomically
// (temporary file, then rename) and verified when read: a file whose length or SHA-256 does
// not match its header is ignored and rewritten.
type Cache struct {
	Dir string // "" disables the cache
}

// DefaultCache is $REWIREGNN_KERNEL_CACHE, else <user cache dir>/rewiregnn/kernels.
func DefaultCache() Cache {
	switch v := strings.TrimSpace(os.Getenv(EnvCache)); v {
	case "off":
		return Cache{}
	case "":
	default:
		return Cache{Dir: v}
	}
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	return Cache{Dir: filepath.Join(base, "rewiregnn", "kernels")}
}

// cacheMagic starts every cache file; the format is magic, SHA-256 of the payload, payload
// length (8 bytes, little-endian), payload.
var cacheMagic = []byte("RWGNNKC1")

// Key is the cache key of one compilation: the hash of the source, of every header,
// of the target and options, and the NVRTC version.
func Key(name, src string, headers map[string]string, target string, nvrtc cudalib.Version, opts []string) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00nvrtc %v\x00", name, target, nvrtc)
	for _, o := range opts {
		fmt.Fprintf(h, "%s\x00", o)
	}
	HashFiles(h, headers)
	fmt.Fprintf(h, "%d\x00%s", len(src), src)
	return fmt.Sprintf("%x", h.Sum(nil))
}

func (c Cache) path(key string) string { return filepath.Join(c.Dir, key[:2], key+".bin") }

// Load returns the cached payload of key, or ok false when it is absent or damaged.
func (c Cache) Load(key string) (payload []byte, ok bool) {
	if c.Dir == "" || len(key) < 2 {
		return nil, false
	}
	b, err := os.ReadFile(c.path(key))
	if err != nil {
		return nil, false
	}
	p, err := decodeCacheEntry(b)
	if err != nil {
		return nil, false
	}
	return p, true
}

func decodeCacheEntry(b []byte) ([]byte, error) {
	hdr := len(cacheMagic) + sha256.Size + 8
	if len(b) < hdr || !bytes.Equal(b[:len(cacheMagic)], cacheMagic) {
		return nil, errors.New("not a kernel cache entry")
	}
	sum := b[len(cacheMagic) : len(cacheMagic)+sha256.Size]
	n := binary.LittleEndian.Uint64(b[hdr-8 : hdr])
	payload := b[hdr:]
	if uint64(len(payload)) != n {
		return nil, fmt.Errorf("length %d, header says %d", len(payload), n)
	}
	if got := sha256.Sum256(payload); !bytes.Equal(got[:], sum) {
		return nil, errors.New("checksum mismatch")
	}
	return payload, nil
}

// Store writes payload under key atomically. A cache that cannot be written is not an error
// for the caller to stop on; Store reports it so the caller can log it.
func (c Cache) Store(key string, payload []byte) error {
	if c.Dir == "" || len(key) < 2 {
		return nil
	}
	p := c.path(key)
	sum := sha256.Sum256(payload)
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(payload)))
	var buf bytes.Buffer
	buf.Write(cacheMagic)
	buf.Write(sum[:])
	buf.Write(n[:])
	buf.Write(payload)
	if err := runfiles.WriteAtomic(p, buf.Bytes(), 0o600); err != nil {
		return fmt.Errorf("cuda: kernel cache: %w", err)
	}
	return nil
}

// HashFiles writes named texts to h in name order, each as name, length and text, so no two
// different sets hash alike (the kernel cache's keys, and the emulator's build keys).
func HashFiles(h io.Writer, files map[string]string) {
	for _, n := range slices.Sorted(maps.Keys(files)) {
		fmt.Fprintf(h, "%s\x00%d\x00%s", n, len(files[n]), files[n])
	}
}

// Several devices opened at once in one process (train -parallel, gpubench -concurrent) need
// the same kernels: LoadOrBuild compiles each key once per process, the others waiting for it
// and taking its image, and keeps the images it loaded or built, so that a later device needs
// neither NVRTC nor the disk (nor, with the cache off, a compilation of its own).
var (
	keyMu  sync.Mutex
	keyOne = map[string]*sync.Mutex{} // one lock per key being loaded or built
	images = map[string][]byte{}      // images loaded or built by this process
)

// LoadOrBuild returns key's image: this process's copy, the cache's, or build's (stored in the
// cache). cached says it was not built now. Concurrent calls for one key build it once; a failed
// build is not remembered, so the next call tries again.
func (c Cache) LoadOrBuild(key string, build func() ([]byte, error)) (img []byte, cached bool, err error) {
	keyMu.Lock()
	mu := keyOne[key]
	if mu == nil {
		mu = new(sync.Mutex)
		keyOne[key] = mu
	}
	keyMu.Unlock()
	mu.Lock()
	defer mu.Unlock()
	keyMu.Lock()
	img, ok := images[key]
	keyMu.Unlock()
	if ok {
		return img, true, nil
	}
	if img, ok = c.Load(key); !ok {
		if img, err = build(); err != nil {
			return nil, false, err
		}
		_ = c.Store(key, img) // a read-only cache only costs a recompile in the next process
	}
	keyMu.Lock()
	images[key] = img
	keyMu.Unlock()
	return img, ok, nil
}
