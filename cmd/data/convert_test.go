package main

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rewiregnn/rewiregnn/data"
	"github.com/rewiregnn/rewiregnn/download"
	"github.com/rewiregnn/rewiregnn/internal/testdata"
	"github.com/rewiregnn/rewiregnn/prep"
)

// fixtures is the data folder of the readers' tests: the four public distributions in
// miniature (scripts/pyfixtures/make.py).
const fixtures = "../../data/testdata/pyg"

// zipFolder zips dir's files, their names relative to base (the archive's top folder as the
// distribution has it, e.g. molecules/train.pickle).
func zipFolder(t *testing.T, base string, names ...string) []byte {
	t.Helper()
	var buf bytes.Buffer
	z := zip.NewWriter(&buf)
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(base, n))
		if err != nil {
			t.Fatal(err)
		}
		w, err := z.Create(filepath.ToSlash(n))
		if err != nil {
			t.Fatal(err)
		}
		w.Write(b)
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func sum(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

// TestGetConvertsTheDistributions serves the fixture distributions as the archives the
// registry names (a zip per dataset, ZINC's index files beside), fetches all six with the
// command and its real convert step, and checks that the graphs read and cached equal those
// read from the fixture folder directly.
func TestGetConvertsTheDistributions(t *testing.T) {
	files := map[string][]byte{}
	files["/molecules.zip"] = zipFolder(t, filepath.Join(fixtures, "zinc", "pyg"),
		"molecules/train.pickle", "molecules/val.pickle", "molecules/test.pickle")
	for _, s := range []string{"train", "val", "test"} {
		b, err := os.ReadFile(filepath.Join(fixtures, "zinc", "pyg", s+".index"))
		if err != nil {
			t.Fatal(err)
		}
		files["/"+s+".index"] = b
	}
	files["/aqsol_graph_raw.zip"] = zipFolder(t, filepath.Join(fixtures, "aqsol", "pyg"),
		"asqol_graph_raw/train.pickle", "asqol_graph_raw/val.pickle", "asqol_graph_raw/test.pickle")
	files["/MNIST_v2.zip"] = zipFolder(t, filepath.Join(fixtures, "mnist", "pyg"), "MNIST_v2.pt")
	files["/CIFAR10_v2.zip"] = zipFolder(t, filepath.Join(fixtures, "cifar10", "pyg"), "CIFAR10_v2.pt")
	for _, folder := range []string{"peptidesfunc", "peptidesstruct"} {
		name := "peptides-" + strings.TrimPrefix(folder, "peptides")
		files["/"+folder+".zip"] = zipFolder(t, filepath.Join(fixtures, name, "pyg"),
			folder+"/train.pt", folder+"/val.pt", folder+"/test.pt")
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		http.ServeContent(w, r, r.URL.Path, time.Time{}, bytes.NewReader(b))
	}))
	t.Cleanup(srv.Close)

	oldOf := archivesOf
	t.Cleanup(func() { archivesOf = oldOf })
	archivesOf = func(name string) ([]download.Archive, error) {
		as, err := download.Archives(name)
		for i := range as { // the registry's archives, served here with their sums known
			as[i].URL = srv.URL + "/" + as[i].Name
			as[i].SHA256 = sum(files["/"+as[i].Name])
			as[i].Size = int64(len(files["/"+as[i].Name]))
		}
		return as, err
	}
	root, cache := filepath.Join(t.TempDir(), "data"), t.TempDir()
	var so, se bytes.Buffer
	if code := run([]string{"get", "-data", root, "-cache", cache, "-retries", "0", "all", "peptides-func", "peptides-struct"}, &so, &se); code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, so.String(), se.String())
	}
	for _, name := range []string{"zinc", "aqsol", "mnist", "cifar10", "peptides-func", "peptides-struct"} {
		if !strings.Contains(so.String(), name+": read train ") {
			t.Errorf("no conversion line for %s:\n%s", name, so.String())
		}
		for _, split := range []string{"train", "val", "test"} {
			want, _, err := data.LoadSplit(fixtures, name, split)
			if err != nil {
				t.Fatal(err)
			}
			key := prep.Key{Dataset: name, Split: split, Encoding: prep.EncRaw, Seed: data.DefaultGenSeed}.KeyedBy(root)
			got, err := prep.ReadFile(filepath.Join(cache, key.FileName()), key)
			if err != nil {
				t.Fatalf("%s %s: cache: %v", name, split, err)
			}
			if len(got) != len(want) {
				t.Fatalf("%s %s: %d cached graphs, want %d", name, split, len(got), len(want))
			}
			for i := range got {
				if got[i].N != want[i].N || len(got[i].Src) != len(want[i].Src) || !equalGraph(got[i], want[i]) {
					t.Errorf("%s %s graph %d differs from the fixture's", name, split, i)
				}
			}
		}
	}
	var cached int
	filepath.WalkDir(cache, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.Contains(p, "@pyg") {
			cached++
		}
		return nil
	})
	if cached != 18 {
		t.Errorf("%d cache files keyed by the public source, want 18", cached)
	}
}

func equalGraph(a, b *data.Graph) bool {
	if a.N != b.N || a.Label != b.Label || len(a.Y) != len(b.Y) {
		return false
	}
	for i := range a.Y { // bit for bit: a missing label (NaN) equals itself
		if math.Float32bits(a.Y[i]) != math.Float32bits(b.Y[i]) {
			return false
		}
	}
	for i := range a.Src {
		if a.Src[i] != b.Src[i] || a.Dst[i] != b.Dst[i] || !a.Edge.RowEqual(i, &b.Edge, i) {
			return false
		}
	}
	for i := 0; i < a.N; i++ {
		if !a.Node.RowEqual(i, &b.Node, i) {
			return false
		}
	}
	return true
}

// TestPublicZINCMatchesExactFiles: where the data folder holds both the public ZINC
// distribution and the shared folder's exact val/test JSON Lines files, the graphs read from
// the pickles equal them graph for graph (nodes, edges in order, bond types, target bit for
// bit). Skipped (with the command that enables it) where the public files are absent.
func TestPublicZINCMatchesExactFiles(t *testing.T) {
	dir := testdata.Dir(t)
	if data.SourceOf(dir, "zinc") != data.SourcePyG {
		t.Skipf("no public ZINC distribution in %s: `go run ./cmd/data get -data %s zinc` enables this check", dir, dir)
	}
	for _, split := range []string{"val", "test"} {
		exact := filepath.Join(dir, "zinc", split+".jsonl.gz")
		if _, err := os.Stat(exact); err != nil {
			t.Skipf("%s absent", exact)
		}
		want, err := data.ReadMolecules(exact, 28, 4)
		if err != nil {
			t.Fatal(err)
		}
		got, _, err := data.LoadSplit(dir, "zinc", split)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: %d graphs from the pickles, %d in %s", split, len(got), len(want), exact)
		}
		for i := range got {
			if !equalGraph(got[i], want[i]) {
				t.Errorf("%s graph %d differs from %s", split, i, exact)
			}
		}
	}
}

// TestPublicAQSOLMatchesExactFiles: where the data folder holds the public AQSOL val and test
// pickles beside the exact JSON Lines files, the reader's graphs (after the benchmark loader's
// filter) equal them graph for graph. Skipped where the pickles are absent.
func TestPublicAQSOLMatchesExactFiles(t *testing.T) {
	dir := testdata.Dir(t)
	for _, split := range []string{"val", "test"} {
		pkl := filepath.Join(data.PyGDir(dir, "aqsol"), "asqol_graph_raw", split+".pickle")
		raw, err := os.ReadFile(pkl)
		if err != nil {
			t.Skipf("no public AQSOL %s pickle (%v): `go run ./cmd/data get -data %s aqsol` enables this check", split, err, dir)
		}
		exact := filepath.Join(dir, "aqsol", split+".jsonl.gz")
		want, err := data.ReadMolecules(exact, 65, 5)
		if err != nil {
			t.Skipf("%s: %v", exact, err)
		}
		got, dropped, err := data.ReadAQSOLPickle(pkl, raw)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d graphs, dropped %+v", pkl, len(got), dropped)
		if len(got) != len(want) {
			t.Fatalf("%s: %d graphs from the pickle, %d in %s", split, len(got), len(want), exact)
		}
		for i := range got {
			if !equalGraph(got[i], want[i]) {
				t.Errorf("%s graph %d differs from %s", split, i, exact)
			}
		}
	}
}

// TestGetBesideJSONL: fetching Peptides-func's public distribution into a folder that holds its
// JSON Lines files (which runs read first) reads and checks the fetched files and says that
// runs read the JSON Lines files; nothing is cached for graphs no run reads.
func TestGetBesideJSONL(t *testing.T) {
	archive := zipFolder(t, filepath.Join(fixtures, "peptides-func", "pyg"), "peptidesfunc/train.pt", "peptidesfunc/val.pt", "peptidesfunc/test.pt")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.ServeContent(w, r, r.URL.Path, time.Time{}, bytes.NewReader(archive))
	}))
	t.Cleanup(srv.Close)
	oldOf := archivesOf
	t.Cleanup(func() { archivesOf = oldOf })
	archivesOf = func(name string) ([]download.Archive, error) {
		as, err := download.Archives(name)
		for i := range as {
			as[i].URL, as[i].SHA256, as[i].Size = srv.URL+"/"+as[i].Name, sum(archive), int64(len(archive))
		}
		return as, err
	}
	root, cache := t.TempDir(), t.TempDir()
	os.MkdirAll(filepath.Join(root, "peptides-func"), 0o755)
	for _, split := range []string{"train", "val", "test"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "data", "testdata", "jsonl", "peptides-func", split+".jsonl.gz"))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(root, "peptides-func", split+".jsonl.gz"), b, 0o644)
	}
	var so, se bytes.Buffer
	if code := run([]string{"get", "-data", root, "-cache", cache, "-retries", "0", "peptides-func"}, &so, &se); code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, so.String(), se.String())
	}
	want := "peptides-func: read train 3, val 1, test 2 graphs from the public distribution in " + data.PyGDir(root, "peptides-func") +
		" (not cached: runs read peptides-func from the JSON Lines files in " + filepath.Join(root, "peptides-func")
	if !strings.Contains(so.String(), want) {
		t.Errorf("stdout lacks %q:\n%s", want, so.String())
	}
	if entries, _ := os.ReadDir(cache); len(entries) != 0 {
		t.Errorf("%d cache entries, want none", len(entries))
	}
}
