package prep

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/rewiregnn/rewiregnn/data"
)

// clusterSplit is a small dense split (CLUSTER at r = 2 is nearly complete) of n graphs, more
// than one streaming chunk when n > ChunkGraphs.
func clusterSplit(t *testing.T, n int) ([]*data.Graph, *data.Spec, Key) {
	t.Helper()
	c := data.ClusterConfig()
	c.Val = n
	c.SizeMin, c.SizeMax = 1, 3
	key := Key{Dataset: "cluster", Split: "val", R: 2, Encoding: "adj", CLS: true, SelfLoops: true, Seed: 9}
	raw, err := data.GenerateSBM(c, "val", key.Seed)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := data.OpenSpec("", "cluster")
	if err != nil {
		t.Fatal(err)
	}
	return raw, spec, key
}

// TestStreamedFileIsEncode: the cache file Load writes chunk by chunk, for any number of
// workers, is byte for byte Encode of the whole split built at once (the format is unchanged:
// files written before streaming are read as they are), and the graphs Load returns, built or
// read back, are those of Build.
func TestStreamedFileIsEncode(t *testing.T) {
	raw, spec, key := clusterSplit(t, ChunkGraphs+37)
	want, err := Build(raw, spec, key, 1)
	if err != nil {
		t.Fatal(err)
	}
	wantBytes := encoded(t, key, want)
	for _, workers := range []int{1, 3} {
		dir := t.TempDir()
		src := func() ([]*data.Graph, *data.Spec, error) { return raw, spec, nil }
		gs, st, err := Load(dir, key, src, workers)
		if err != nil || st.Hit || st.WriteErr != nil {
			t.Fatalf("workers %d: build %+v, %v", workers, st, err)
		}
		if !reflect.DeepEqual(gs, want) {
			t.Fatalf("workers %d: the built graphs are not Build's", workers)
		}
		b, err := os.ReadFile(st.Path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b, wantBytes) {
			t.Fatalf("workers %d: the streamed file (%d bytes) is not Encode's (%d bytes)", workers, len(b), len(wantBytes))
		}
		back, st, err := Load(dir, key, src, workers)
		if err != nil || !st.Hit || !bytes.Equal(encoded(t, key, back), wantBytes) {
			t.Fatalf("workers %d: read back %+v, %v", workers, st, err)
		}
	}
}

// TestSizes: Sizes gives each graph's size as the graphs Load reads from the cache have it,
// whether it builds the file or reads it.
func TestSizes(t *testing.T) {
	raw, spec, key := clusterSplit(t, 40)
	dir := t.TempDir()
	calls := 0
	src := func() ([]*data.Graph, *data.Spec, error) { calls++; return raw, spec, nil }
	built, st, err := Sizes(dir, key, src, 2)
	if err != nil || st.Hit || st.Rebuilt != "missing" {
		t.Fatalf("first Sizes: %+v, %v", st, err)
	}
	read, st, err := Sizes(dir, key, src, 2)
	if err != nil || !st.Hit || calls != 1 {
		t.Fatalf("second Sizes: %+v, %v, %d builds", st, err, calls)
	}
	gs, st, err := Load(dir, key, src, 2)
	if err != nil || !st.Hit {
		t.Fatalf("Load after Sizes: %+v, %v", st, err)
	}
	for i, g := range gs {
		s := SizeOf(g)
		if read[i] != s || built[i] != s {
			t.Fatalf("graph %d: Sizes %+v (built) %+v (read), the graph read %+v", i, built[i], read[i], s)
		}
		var arrays int64
		for _, n := range []int{len(g.Src), len(g.Dst), len(g.Node.Cat), len(g.Node.Float), len(g.Edge.Cat), len(g.Edge.Float),
			len(g.Y), len(g.NodeLabel), len(g.SP), len(g.Adj), len(g.NodePE)} {
			arrays += 4 * int64(n)
		}
		if s.Bytes != arrays+graphOverhead || s.E != len(g.Src) || s.N != g.N {
			t.Fatalf("graph %d: SizeOf %+v, arrays %d bytes, %d nodes, %d edges", i, s, arrays, g.N, len(g.Src))
		}
	}
	if len(read) != len(raw) || len(built) != len(raw) {
		t.Fatalf("%d and %d sizes for %d graphs", len(built), len(read), len(raw))
	}
	// The sizes pass checks the file as Load does: a damaged file is rebuilt, and says why.
	b, err := os.ReadFile(st.Path)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 1
	if err := os.WriteFile(st.Path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	again, st, err := Sizes(dir, key, src, 2)
	if err != nil || st.Hit || !strings.Contains(st.Rebuilt, "checksum") || !reflect.DeepEqual(again, built) {
		t.Fatalf("a damaged file: %+v, %v", st, err)
	}
}

// TestReaderChecks: a file cut anywhere or with any byte flipped is refused by the streaming
// reader as truncated or corrupt (the checksum), whatever record the damage hit first; a reader
// that stops after the first graphs still checks the whole file.
func TestReaderChecks(t *testing.T) {
	raw, spec, key := clusterSplit(t, 5)
	gs, err := Build(raw, spec, key, 1)
	if err != nil {
		t.Fatal(err)
	}
	good := encoded(t, key, gs)
	path := filepath.Join(t.TempDir(), key.FileName())
	for _, at := range []int{3, 12, 40, len(good) / 3, len(good) / 2, len(good) - 5, len(good) - 1} {
		bad := bytes.Clone(good)
		bad[at] ^= 0x40
		if err := os.WriteFile(path, bad, 0o600); err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{-1, 1} {
			if _, err := ReadFileFirst(path, key, n); err == nil || !strings.Contains(err.Error(), path) ||
				!(strings.Contains(err.Error(), "checksum") || strings.Contains(err.Error(), "magic")) {
				t.Errorf("byte %d flipped, first %d: %v", at, n, err)
			}
		}
	}
	for _, cut := range []int{10, len(good) / 2, len(good) - 4, len(good) - 1} {
		if err := os.WriteFile(path, good[:cut], 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadFileFirst(path, key, 2); err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("cut at %d: %v", cut, err)
		}
	}
	if err := os.WriteFile(path, append(bytes.Clone(good), 0), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFile(path, key); err == nil {
		t.Error("a byte after the checksum was accepted")
	}
}

// TestWriterCount: a file whose writer adds fewer or more graphs than announced is not kept.
func TestWriterCount(t *testing.T) {
	raw, spec, key := clusterSplit(t, 3)
	gs, err := Build(raw, spec, key, 1)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), key.FileName())
	for _, n := range []int{2, 4} {
		err := WriteGraphs(path, key, n, func(w *Writer) error {
			for _, g := range gs {
				if err := w.Add(g); err != nil {
					return err
				}
			}
			return nil
		})
		if err == nil {
			t.Errorf("%d graphs written under a header of %d: no error", len(gs), n)
		}
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Errorf("announced %d: a file was left: %v", n, err)
		}
	}
	r, err := OpenReader(path, key)
	if err == nil {
		r.Close()
	}
	if err := WriteFile(path, key, gs); err != nil {
		t.Fatal(err)
	}
	r, err = OpenReader(path, key)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	n := 0
	for {
		_, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != len(gs) || r.Count != len(gs) {
		t.Errorf("read %d graphs of %d announced, want %d", n, r.Count, len(gs))
	}
}

// TestDiskCheck: a cache file that will not fit its folder's free space is refused after its
// first chunk, naming the file, the need and the way out, and leaves nothing behind; where the
// free space is unknown the file is built.
func TestDiskCheck(t *testing.T) {
	raw, spec, key := clusterSplit(t, 3*ChunkGraphs)
	gs, err := Build(raw, spec, key, 1)
	if err != nil {
		t.Fatal(err)
	}
	size := int64(len(encoded(t, key, gs)))
	src := func() ([]*data.Graph, *data.Spec, error) { return raw, spec, nil }
	defer func(f func(string) (int64, error)) { freeSpace = f }(freeSpace)
	dir := t.TempDir()
	freeSpace = func(string) (int64, error) { return size / 4, nil }
	_, _, err = Load(dir, key, src, 2)
	if err == nil || !strings.Contains(err.Error(), key.FileName()) || !strings.Contains(err.Error(), "-cache off") ||
		!strings.Contains(err.Error(), "first 512 of 1536 graphs") {
		t.Fatalf("a file four times the free space: %v", err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("a refused file left %v", left)
	}
	freeSpace = func(string) (int64, error) { return 0, errors.New("unknown") }
	if _, st, err := Load(dir, key, src, 2); err != nil || st.WriteErr != nil {
		t.Fatalf("free space unknown: %+v, %v", st, err)
	}
}
