// Package prep is the preprocessing stage between the datasets (data) and training: it
// rewires (rewire), adds positional encodings (posenc) and a CLS node to a split, once, in
// parallel, and keeps the result on disk in a compact checksummed binary file, so that later
// runs load it instead of recomputing it.
//
// A cache file is identified by its Key (dataset, split, radius, encoding, CLS, q or k,
// self-loops, generation seed) and carries the full key, the file-format version and the preprocessing
// version in its header; a CRC-32C over the whole file detects corruption. A file that fails
// any check is rebuilt. Writes go to a temporary file renamed into place, so a crash never
// leaves a half-written cache under the final name. The same inputs give byte-identical files
// regardless of the number of workers.
package prep

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"github.com/rewiregnn/rewiregnn/data"
	"github.com/rewiregnn/rewiregnn/internal/diskfree"
	"github.com/rewiregnn/rewiregnn/internal/memlimit"
	"github.com/rewiregnn/rewiregnn/posenc"
	"github.com/rewiregnn/rewiregnn/rewire"
)

// PreprocessVersion is bumped whenever rewiring, the encodings or their conventions change in a
// way that alters the cached graphs; files written by another version are rebuilt.
const PreprocessVersion = 2 // 2: "pattern" became the later notebook recipe (docs/protocol.md §"PATTERN")

// Key.Encoding takes every encoding of data's registry (data.LookupEncoding) and EncRaw.
const (
	EncNone = "none" // rewiring only
	EncRaw  = "raw"  // the split as loaded, not rewired (R must be 0): caches slow loaders such as superpixels
)

// Key identifies one preprocessed split.
type Key struct {
	Dataset   string
	Split     string
	R         int
	Encoding  string
	CLS       bool
	Q         int  // Laplacian width; used by an encoding whose width is q only (data.WidthQ)
	Steps     int  // random-walk steps k; used by an encoding whose width is k only (data.WidthSteps)
	SelfLoops bool // the paper's setting is true (docs/protocol.md §"Rewiring")
	Seed      uint64
	Source    string // data.SourcePyG when read from the public distribution; "" for the dataset's other source
	Version   int    // preprocessing version; 0 means PreprocessVersion
}

// KeyedBy sets k.Source to the source data.LoadSplit reads for k's dataset in dataDir, so that
// the graphs of the public distribution and those of a substitute never share a cache file.
func (k Key) KeyedBy(dataDir string) Key {
	k.Source = ""
	if data.SourceOf(dataDir, k.Dataset) == data.SourcePyG {
		k.Source = data.SourcePyG
	}
	return k
}

func (k Key) version() int {
	if k.Version == 0 {
		return PreprocessVersion
	}
	return k.Version
}

// Validate reports a key that cannot be built.
func (k Key) Validate() error {
	switch {
	case k.Dataset == "" || k.Split == "":
		return fmt.Errorf("cache key %s: dataset and split are required", k)
	case k.Encoding == EncRaw && (k.R != 0 || k.CLS):
		return fmt.Errorf("cache key %s: the raw split takes r = 0 and no CLS node", k)
	case k.Encoding != EncRaw && k.R < 1:
		return fmt.Errorf("cache key %s: r = %d: the hop radius must be at least 1", k, k.R)
	}
	if err := k.validEncoding(); err != nil {
		return err
	}
	for _, s := range []string{k.Dataset, k.Split, k.Source} {
		if strings.ContainsAny(s, `/\ `) || strings.Contains(s, "..") {
			return fmt.Errorf("cache key: %q may not contain path separators, spaces or \"..\"", s)
		}
	}
	return nil
}

// validEncoding reports an encoding the registry lacks, or a width below 1 where the encoding
// needs one.
func (k Key) validEncoding() error {
	if k.Encoding == EncRaw {
		return nil
	}
	e, ok := data.LookupEncoding(k.Encoding)
	if !ok {
		return fmt.Errorf("cache key %s: unknown encoding %q (want %s or %s)", k, k.Encoding, strings.Join(data.EncodingNames(), ", "), EncRaw)
	}
	if w := e.WidthOf(k.params()); e.NeedsWidth() && w < 1 {
		return fmt.Errorf("cache key %s: %s needs %s ≥ 1, got %d", k, e.Title, e.Width.Symbol(), w)
	}
	return nil
}

// params are the settings the key's encoding may read.
func (k Key) params() data.EncodingParams {
	return data.EncodingParams{R: k.R, Q: k.Q, Steps: k.Steps}
}

// WithWidths is k with the Laplacian width q or the random-walk steps set where its encoding
// reads them, and left 0 where it does not, so that a setting the encoding ignores never
// splits its cache.
func (k Key) WithWidths(q, steps int) Key {
	e, _ := data.LookupEncoding(k.Encoding)
	p := e.KeyParams(data.EncodingParams{R: k.R, Q: q, Steps: steps})
	k.Q, k.Steps = p.Q, p.Steps
	return k
}

// DatasetID names the key's dataset and, when it is not the dataset's default source, its
// source ("zinc", "zinc@pyg"): the part of a cache file name that keeps graphs of different
// sources apart.
func (k Key) DatasetID() string {
	if k.Source == "" {
		return strings.ToLower(k.Dataset)
	}
	return strings.ToLower(k.Dataset) + "@" + k.Source
}

// String is the full key, as stored in a cache file's header. Its width part is the node
// encoding's (data.Encoding.KeyPart): q<Q> for lp, k<Steps> for rwse, q0 for the others.
func (k Key) String() string {
	e, _ := data.LookupEncoding(k.Encoding) // raw and unknown encodings: q0
	width := e.KeyPart(k.params())
	return fmt.Sprintf("%s/%s/r%d/%s/cls%t/%s/selfloops%t/seed%d/v%d",
		k.DatasetID(), k.Split, k.R, k.Encoding, k.CLS, width, k.SelfLoops, k.Seed, k.version())
}

// FileName is the cache file's name: the key without the version, so that a file written by an
// older version is found, recognised as stale and replaced.
func (k Key) FileName() string {
	s := k.String()
	s = s[:strings.LastIndex(s, "/v")]
	return strings.ReplaceAll(s, "/", "_") + ".rwgc"
}

// Build rewires and encodes gs as key says, on workers goroutines (0: all cores), each with its
// own rewire.Rewirer and node encoder. The node encodings (Laplacian, random walk) are computed
// on the original graph, before rewiring and the CLS node, whose row is zero; with them the
// r-hop edges carry no edge encoding. Results are in input order.
func Build(gs []*data.Graph, spec *data.Spec, key Key, workers int) ([]*data.Graph, error) {
	if err := key.Validate(); err != nil {
		return nil, err
	}
	if key.Encoding == EncRaw {
		return gs, nil
	}
	enc, _ := data.LookupEncoding(key.Encoding)
	opt := rewire.Options{R: key.R, SelfLoops: key.SelfLoops, CLS: key.CLS,
		SP: enc.Input == data.EdgeSP, Adj: enc.Input == data.EdgeAdj,
		EdgeConst: spec.EdgeConst, CLSNode: spec.CLSNode}
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = min(workers, max(len(gs), 1))
	out := make([]*data.Graph, len(gs))
	errs := make([]error, workers)
	var wg sync.WaitGroup
	next := make(chan int, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			var rw rewire.Rewirer
			var pe nodeEncoder
			for i := range next {
				if errs[w] != nil {
					continue
				}
				g, err := pe.encode(gs[i], key)
				if err != nil {
					errs[w] = fmt.Errorf("%s graph %d: %w", key, i, err)
					continue
				}
				r, err := rw.Rewire(g, opt)
				if err != nil {
					errs[w] = fmt.Errorf("%s graph %d: %w", key, i, err)
					continue
				}
				out[i] = r
			}
		}(w)
	}
	for i := range gs {
		next <- i
	}
	close(next)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// NodeEncoder computes a node encoding of width columns for the graph of n nodes and edges
// src[i] → dst[i], row by row into out (n × width). Each goroutine has its own.
type NodeEncoder interface {
	Encode(n int, src, dst []int32, width int, out []float32) error
}

// nodeEncoders computes each node encoding of data's registry (data.NodeVector): a new
// encoder per goroutine, keeping its workspace.
var nodeEncoders = map[string]func() NodeEncoder{
	"lp":   func() NodeEncoder { return new(posenc.Laplacian) },
	"rwse": func() NodeEncoder { return new(posenc.RandomWalk) },
}

// RegisterNodeEncoder sets how the node encoding name of data's registry is computed (a test's
// dummy encoding, or a new one beside those above), from an init function. It panics on a name
// already set.
func RegisterNodeEncoder(name string, newEncoder func() NodeEncoder) {
	if _, taken := nodeEncoders[name]; taken {
		panic(fmt.Sprintf("prep.RegisterNodeEncoder: %q already set", name))
	}
	nodeEncoders[name] = newEncoder
}

// nodeEncoder computes a key's node encoding, one encoder per kind; one per goroutine.
type nodeEncoder map[string]NodeEncoder

// encode returns g with the node encoding key asks for (g itself when it asks for none),
// computed on g as given: the original graph, before rewiring.
func (e *nodeEncoder) encode(g *data.Graph, key Key) (*data.Graph, error) {
	enc, _ := data.LookupEncoding(key.Encoding)
	if enc.Input != data.NodeVector {
		return g, nil
	}
	pe, err := e.encoder(key.Encoding)
	if err != nil {
		return nil, err
	}
	width := enc.WidthOf(key.params())
	c := *g
	c.NodePEDim, c.NodePE = width, make([]float32, g.N*width)
	if err := pe.Encode(g.N, g.Src, g.Dst, width, c.NodePE); err != nil {
		return nil, err
	}
	return &c, nil
}

// encoder returns the goroutine's encoder of the node encoding name, made on first use.
func (e *nodeEncoder) encoder(name string) (NodeEncoder, error) {
	if pe := (*e)[name]; pe != nil {
		return pe, nil
	}
	newEncoder, ok := nodeEncoders[name]
	if !ok {
		return nil, fmt.Errorf("node encoding %q: no computation registered (prep.RegisterNodeEncoder)", name)
	}
	if *e == nil {
		*e = nodeEncoder{}
	}
	(*e)[name] = newEncoder()
	return (*e)[name], nil
}

// Status says how Load obtained its graphs.
type Status struct {
	Path    string
	Hit     bool   // read from an intact, current cache file
	Rebuilt string // why the file was (re)built: "missing", or what was wrong with it
	// WriteErr is why a built split could not be written (a read-only or unwritable folder):
	// the graphs are still returned, the cache is just not kept.
	WriteErr error
}

// Describe is Load's one log line: which file was read, or built and why, and a failed write.
func (st Status) Describe() string {
	switch {
	case st.Hit:
		return "cache: read " + st.Path
	case st.WriteErr != nil:
		return fmt.Sprintf("cache: warning: built the split (%s) but could not keep it: %v; continuing without the cache", st.Rebuilt, st.WriteErr)
	case st.Rebuilt == "missing":
		return "cache: built " + st.Path
	}
	return "cache: rebuilt, the old file failed a check: " + st.Rebuilt
}

// Source produces the raw split and its spec when the cache must be built.
type Source func() ([]*data.Graph, *data.Spec, error)

// Load returns the preprocessed split for key from the cache folder dir, building it from src
// and writing the cache file (creating dir) when it is missing, corrupt or stale. The file is
// written as the graphs are made (buildFile), never encoded whole in memory. A file that cannot
// be written is not an error: Status.WriteErr says why, and the graphs are returned.
func Load(dir string, key Key, src Source, workers int) ([]*data.Graph, Status, error) {
	var gs []*data.Graph
	st, err := through(dir, key, src, workers, func(r *Reader) error {
		var err error
		gs, err = readGraphs(r, -1)
		return err
	}, func(n int) { gs = make([]*data.Graph, n) }, func(i int, g *data.Graph) error {
		gs[i] = g
		return nil
	})
	if err != nil {
		return nil, st, err
	}
	return gs, st, nil
}

// Sizes is Load for a memory plan: the GraphSize of every graph of key's split, in order, as
// Load would return it from the cache file, read graph by graph, or recorded while the file is
// built chunk by chunk; the preprocessed split is never held whole.
func Sizes(dir string, key Key, src Source, workers int) ([]GraphSize, Status, error) {
	var sz []GraphSize
	st, err := through(dir, key, src, workers, func(r *Reader) error {
		sz = make([]GraphSize, 0, min(r.Count, 1<<20))
		for {
			s, err := r.NextSize()
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return err
			}
			sz = append(sz, s)
		}
	}, func(n int) { sz = make([]GraphSize, n) }, func(i int, g *data.Graph) error {
		sz[i] = sizeRead(g) // the run reads the file just written
		return nil
	})
	if err != nil {
		return nil, st, err
	}
	return sz, st, nil
}

// through is Load's and Sizes' common path: read, a current cache file's graphs given to read;
// else the split is built from src, start told how many graphs it has and emit given each one as
// it is made, while the file is written.
func through(dir string, key Key, src Source, workers int, read func(*Reader) error,
	start func(n int), emit func(i int, g *data.Graph) error) (Status, error) {
	if err := key.Validate(); err != nil {
		return Status{}, err
	}
	st := Status{Path: filepath.Join(dir, key.FileName())}
	err := readFile(st.Path, key, read)
	if err == nil {
		st.Hit = true
		return st, nil
	}
	if errors.Is(err, os.ErrNotExist) {
		st.Rebuilt = "missing"
	} else {
		st.Rebuilt = err.Error()
	}
	raw, spec, err := src()
	if err != nil {
		return st, fmt.Errorf("cache %s: loading the raw split: %w", key, err)
	}
	start(len(raw))
	st.WriteErr, err = buildFile(st.Path, key, raw, spec, workers, emit)
	return st, err
}

// readFile opens the cache file at path and hands it to read; errors name the file.
func readFile(path string, key Key, read func(*Reader) error) error {
	r, err := OpenReader(path, key)
	if err != nil {
		return err
	}
	defer r.Close()
	if err := read(r); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// buildFile rewires and encodes raw chunk by chunk (Stream), handing each graph to emit and
// writing it to the cache file at path as it is made. A failed write does not stop the build:
// it is returned as writeErr (the file is then not kept); a failed build is err.
func buildFile(path string, key Key, raw []*data.Graph, spec *data.Spec, workers int,
	emit func(i int, g *data.Graph) error) (writeErr, err error) {
	built := false
	var berr error
	first := min(ChunkGraphs, len(raw)) // the disk check follows the first chunk
	werr := WriteGraphs(path, key, len(raw), func(w *Writer) error {
		built = true
		berr = Stream(raw, spec, key, workers, func(i int, g *data.Graph) error {
			if err := emit(i, g); err != nil {
				return err
			}
			w.Add(g) // a failed write sticks in w and is reported when the file is closed
			if i == first-1 && w.err == nil {
				return checkDisk(path, w.n, i+1, len(raw))
			}
			return nil
		})
		return berr
	})
	switch {
	case berr != nil:
		return nil, berr
	case !built: // the file could not even be created: build without it
		return werr, Stream(raw, spec, key, workers, emit)
	}
	return werr, nil
}

// freeSpace is the free disk space of a folder (a variable for the tests).
var freeSpace = diskfree.Bytes

// checkDisk refuses a cache file that will not fit its folder's free space: its size is
// extrapolated from the written bytes of its first graphs (a record's size is nearly
// proportional to its edges, and the first chunk is a fair sample of a split's order). Where the
// free space cannot be read the build goes on (a full disk is then reported by the write).
func checkDisk(path string, written int64, done, count int) error {
	need := written * int64(count) / int64(max(done, 1))
	free, err := freeSpace(filepath.Dir(path))
	if err != nil || need-written <= free {
		return nil
	}
	return fmt.Errorf("cache: %s needs about %s on disk (extrapolated from its first %d of %d graphs), and its folder has %s free: "+
		"free some space, point the cache elsewhere (dataset.cache, -cache DIR) or preprocess without keeping it (-cache off)",
		path, memlimit.Format(need), done, count, memlimit.Format(free+written))
}

// The values of a cache-folder setting (dataset.cache, -cache) besides a folder: DirOff keeps no
// cache, DirAuto is DefaultDir.
const (
	DirOff  = "off"
	DirAuto = "auto"
)

// DefaultDir is the preprocessing cache's default folder: rewiregnn/prep in the user's cache
// folder (os.UserCacheDir: $XDG_CACHE_HOME or ~/.cache on Linux).
func DefaultDir() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no user cache folder (%w)", err)
	}
	return filepath.Join(dir, "rewiregnn", "prep"), nil
}

// ResolveDir is the absolute cache folder a cache-folder setting names: "" for DirOff (or
// empty), DefaultDir for DirAuto, else the folder given.
func ResolveDir(v string) (string, error) {
	switch v {
	case "", DirOff:
		return "", nil
	case DirAuto:
		return DefaultDir()
	}
	return filepath.Abs(v)
}

// slowRaw lists the datasets whose raw split is itself worth caching (SLIC on every image).
var slowRaw = map[string]bool{"mnist": true, "cifar10": true}

// LoadDataset is Load with the source being data.LoadSplitSeed(dataDir, key.Dataset,
// key.Split, key.Seed). For MNIST and CIFAR-10 the superpixel graphs are themselves cached
// (encoding "raw"), so each (r, encoding) variant does not redo the segmentation, and so are the
// graphs read from a public distribution (unpickling the full ZINC pickles takes a while). The
// key's Source is set from dataDir (KeyedBy).
func LoadDataset(cacheDir, dataDir string, key Key, workers int) ([]*data.Graph, Status, error) {
	key, src := datasetSource(cacheDir, dataDir, key, workers)
	return Load(cacheDir, key, src, workers)
}

// SizesDataset is Sizes with LoadDataset's source.
func SizesDataset(cacheDir, dataDir string, key Key, workers int) ([]GraphSize, Status, error) {
	key, src := datasetSource(cacheDir, dataDir, key, workers)
	return Sizes(cacheDir, key, src, workers)
}

// datasetSource is LoadDataset's key and raw source.
func datasetSource(cacheDir, dataDir string, key Key, workers int) (Key, Source) {
	key = key.KeyedBy(dataDir)
	src := func() ([]*data.Graph, *data.Spec, error) {
		return data.LoadSplitSeed(dataDir, key.Dataset, key.Split, key.Seed)
	}
	if name := strings.ToLower(key.Dataset); (slowRaw[name] || key.Source != "") && key.Encoding != EncRaw {
		src = func() ([]*data.Graph, *data.Spec, error) {
			raw := Key{Dataset: name, Split: key.Split, Encoding: EncRaw, Seed: key.Seed, Source: key.Source}
			gs, _, err := LoadDataset(cacheDir, dataDir, raw, workers)
			if err != nil {
				return nil, nil, err
			}
			spec, err := data.OpenSpec(dataDir, name)
			return gs, spec, err
		}
	}
	return key, src
}

// WriteFile writes gs to path atomically (WriteGraphs).
func WriteFile(path string, key Key, gs []*data.Graph) error {
	return WriteGraphs(path, key, len(gs), func(w *Writer) error {
		for _, g := range gs {
			if err := w.Add(g); err != nil {
				return err
			}
		}
		return nil
	})
}

// ReadFile reads a cache file and checks it against key: errors name the file and the check
// that failed (and wrap os.ErrNotExist when the file is missing).
func ReadFile(path string, key Key) ([]*data.Graph, error) { return ReadFileFirst(path, key, -1) }

// ReadFileFirst is ReadFile keeping only the first n graphs (n < 0: all): a subset run then holds
// its graphs, not the whole split's. The file is read graph by graph (Reader), never whole.
func ReadFileFirst(path string, key Key, n int) ([]*data.Graph, error) {
	r, err := OpenReader(path, key)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	gs, err := readGraphs(r, n)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return gs, nil
}
