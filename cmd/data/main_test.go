package main

import (
	"archive/zip"
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rewiregnn/rewiregnn/download"
	"github.com/rewiregnn/rewiregnn/internal/testdata"
)

func TestUsageErrors(t *testing.T) {
	t.Setenv("REWIREGNN_DATA", t.TempDir())
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "missing subcommand"},
		{[]string{"fetch"}, `unknown subcommand "fetch"`},
		{[]string{"get"}, "name the datasets to fetch (zinc, aqsol, mnist, cifar10, peptides-func, peptides-struct) or all"},
		{[]string{"get", "zinc", "qm9"}, `unknown dataset "qm9"`},
		{[]string{"get", "-retries", "-1", "zinc"}, "-retries -1"},
		{[]string{"get", "-bogus", "zinc"}, "-bogus"},
		{[]string{"list", "zinc"}, `unexpected argument "zinc"`},
	} {
		var so, se bytes.Buffer
		if code := run(c.args, &so, &se); code != 2 || !strings.Contains(se.String(), c.want) || !strings.Contains(se.String(), "usage:") {
			t.Errorf("%q: exit %d, stderr %s", c.args, code, se.String())
		}
	}
	var so, se bytes.Buffer
	if code := run([]string{"get", "-h"}, &so, &se); code != 0 || !strings.Contains(so.String(), "-retries") {
		t.Errorf("-h: exit %d, %s", code, so.String())
	}
}

// fakeRegistry serves a one-archive dataset "demo" (a zip and an index file) from a local server
// for the duration of the test.
func fakeRegistry(t *testing.T) *httptest.Server {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, _ := zw.Create("demo/graphs.txt")
	w.Write([]byte("graphs"))
	zw.Close()
	files := map[string][]byte{"/demo.zip": buf.Bytes(), "/train.index": []byte("0\n1\n")}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Write(b)
	}))
	t.Cleanup(srv.Close)
	archives := []download.Archive{
		{Dataset: "demo", Name: "demo.zip", URL: srv.URL + "/demo.zip", Unzip: true, Dest: "demo/pyg"},
		{Dataset: "demo", Name: "train.index", URL: srv.URL + "/train.index", Dest: "demo/pyg"},
		{Dataset: "gone", Name: "gone.zip", URL: srv.URL + "/gone.zip", Dest: "gone"},
	}
	oldOf, oldNames, oldAll, oldHook := archivesOf, datasetNames, allDatasets, afterFetch
	t.Cleanup(func() { archivesOf, datasetNames, allDatasets, afterFetch = oldOf, oldNames, oldAll, oldHook })
	datasetNames = func() []string { return []string{"demo", "gone"} }
	allDatasets = datasetNames
	archivesOf = func(name string) ([]download.Archive, error) {
		var out []download.Archive
		for _, a := range archives {
			if a.Dataset == name {
				out = append(out, a)
			}
		}
		if len(out) == 0 {
			return nil, errors.New("unknown dataset " + name)
		}
		return out, nil
	}
	return srv
}

func TestGetAndList(t *testing.T) {
	fakeRegistry(t)
	root := filepath.Join(t.TempDir(), "new", "data") // created by get
	var hooked []string
	afterFetch = func(dataset, dir, cache string, _ io.Writer) error {
		hooked = append(hooked, dataset+"@"+dir)
		return nil
	}
	var so, se bytes.Buffer
	if code := run([]string{"get", "demo", "-data", root, "-retries", "0"}, &so, &se); code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, so.String(), se.String())
	}
	if b, err := os.ReadFile(filepath.Join(root, "demo", "pyg", "demo", "graphs.txt")); err != nil || string(b) != "graphs" {
		t.Errorf("extracted: %q %v", b, err)
	}
	if len(hooked) != 1 || hooked[0] != "demo@"+root {
		t.Errorf("afterFetch calls %q", hooked)
	}
	if !strings.Contains(so.String(), "extracted into") || !strings.Contains(se.String(), "could not be checked") {
		t.Errorf("stdout %s\nstderr %s", so.String(), se.String())
	}

	so.Reset()
	se.Reset()
	if code := run([]string{"list", "-data", root}, &so, &se); code != 0 {
		t.Fatalf("list: exit %d\n%s", code, se.String())
	}
	for _, w := range []string{"demo.zip (zip, extracted in place)", "/demo.zip", unknownSum,
		"present, verified against the sum recorded on first download, extracted", "gone.zip", "missing ("} {
		if !strings.Contains(so.String(), w) {
			t.Errorf("list lacks %q:\n%s", w, so.String())
		}
	}

	// A failed dataset: exit 1, with the URL in the message; the hook is not called.
	so.Reset()
	se.Reset()
	hooked = nil
	if code := run([]string{"get", "-data", root, "-retries", "0", "all"}, &so, &se); code != 1 {
		t.Fatalf("exit %d", code)
	}
	if !strings.Contains(se.String(), "/gone.zip") || !strings.Contains(se.String(), "404") ||
		!strings.Contains(se.String(), "1 of 2 datasets not fetched: gone") || len(hooked) != 1 {
		t.Errorf("stderr %s, hook %q", se.String(), hooked)
	}
	if !strings.Contains(so.String(), "already present") {
		t.Errorf("stdout %s", so.String())
	}
}

// TestSelectDatasets: all is the paper's four datasets, the LRGB peptides come when named, and
// nothing is fetched twice.
func TestSelectDatasets(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"all"}, "zinc aqsol mnist cifar10"},
		{[]string{"peptides-func"}, "peptides-func"},
		{[]string{"zinc", "all", "peptides-struct", "peptides-func", "peptides-struct"}, "zinc aqsol mnist cifar10 peptides-struct peptides-func"},
	} {
		got, err := selectDatasets(c.args)
		if err != nil || strings.Join(got, " ") != c.want {
			t.Errorf("%q: %q %v, want %q", c.args, got, err, c.want)
		}
	}
}

// TestPeptidesOffline: without the network, get peptides-func says which Dropbox archive to
// download by hand and where to save it; list shows both peptide archives, their URLs and
// that their sums are recorded on first download.
func TestPeptidesOffline(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there: the connection is refused, as offline
	oldOf := archivesOf
	t.Cleanup(func() { archivesOf = oldOf })
	archivesOf = func(name string) ([]download.Archive, error) {
		as, err := download.Archives(name)
		for i := range as {
			as[i].URL = "http://" + addr + "/" + as[i].Name
		}
		return as, err
	}
	root := t.TempDir()
	var so, se bytes.Buffer
	if code := run([]string{"get", "-data", root, "-retries", "0", "-cache", "off", "peptides-func"}, &so, &se); code != 1 {
		t.Fatalf("exit %d\n%s\n%s", code, so.String(), se.String())
	}
	path := filepath.Join(root, "peptides-func", "pyg", "peptidesfunc.zip")
	for _, w := range []string{"peptides-func: cannot reach http://" + addr + "/peptidesfunc.zip", "a Dropbox link",
		"save it as " + path + ", then run the command again", "1 of 1 datasets not fetched: peptides-func"} {
		if !strings.Contains(se.String(), w) {
			t.Errorf("stderr lacks %q:\n%s", w, se.String())
		}
	}

	archivesOf = oldOf
	so.Reset()
	if code := run([]string{"list", "-data", root}, &so, &se); code != 0 {
		t.Fatalf("list: exit %d\n%s", code, se.String())
	}
	for _, w := range []string{"peptides-func\n  peptidesfunc.zip (zip, extracted in place)", "https://www.dropbox.com/s/ycsq37q8sxs1ou8/peptidesfunc.zip?dl=1",
		"peptides-struct\n  peptidesstruct.zip (zip, extracted in place)", "https://www.dropbox.com/s/zgv4z8fcpmknhs8/peptidesstruct.zip?dl=1",
		"sha256: " + unknownSum, "missing (" + path + ")"} {
		if !strings.Contains(so.String(), w) {
			t.Errorf("list lacks %q:\n%s", w, so.String())
		}
	}
}

// TestListLocalFiles: list shows the files that are not fetched, with where they come from,
// their size and sum, and whether they are there and match: a matching file is verified, a
// missing one is only reported, a mismatch fails the command (status 1) naming the file.
func TestListLocalFiles(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "peptides-func")
	os.MkdirAll(dir, 0o755)
	good, bad := []byte("good graphs\n"), []byte("bad graphs\n")
	os.WriteFile(filepath.Join(dir, "good.jsonl.gz"), good, 0o644)
	os.WriteFile(filepath.Join(dir, "bad.jsonl.gz"), bad, 0o644)
	old := localFilesOf
	t.Cleanup(func() { localFilesOf = old })
	localFilesOf = func(name string) []download.LocalFile {
		if name != "peptides-func" {
			return nil
		}
		f := download.LocalFile{Dataset: name, Dest: "peptides-func", Kind: "JSON Lines graphs", Origin: "built here"}
		g, b, m := f, f, f
		g.Name, g.Size, g.SHA256 = "good.jsonl.gz", int64(len(good)), sum(good)
		b.Name, b.Size, b.SHA256 = "bad.jsonl.gz", int64(len(good)), sum(good)
		m.Name, m.Size, m.SHA256 = "gone.jsonl.gz", 1, sum(nil)
		return []download.LocalFile{g, b, m}
	}
	var so, se bytes.Buffer
	if code := run([]string{"list", "-data", root}, &so, &se); code != 1 {
		t.Fatalf("exit %d, want 1\n%s\n%s", code, so.String(), se.String())
	}
	for _, w := range []string{
		"  peptides-func/good.jsonl.gz (JSON Lines graphs; not fetched)\n    from:   built here\n    size:   12 bytes (12 B)\n    sha256: " + sum(good) + "\n    state:  present, verified\n",
		"  peptides-func/bad.jsonl.gz (JSON Lines graphs; not fetched)", "state:  present but does NOT match (sha256 " + sum(bad) + ", 11 bytes)",
		"state:  missing (" + filepath.Join(dir, "gone.jsonl.gz") + ")",
	} {
		if !strings.Contains(so.String(), w) {
			t.Errorf("list lacks %q:\n%s", w, so.String())
		}
	}
	if !strings.Contains(se.String(), "peptides-func: "+filepath.Join(dir, "bad.jsonl.gz")+": present but does NOT match") || strings.Contains(se.String(), "good.jsonl.gz") {
		t.Errorf("stderr %s", se.String())
	}

	// the registry's own files: small fake copies do not match the recorded sums
	localFilesOf = old
	for _, split := range []string{"train", "val", "test"} {
		os.WriteFile(filepath.Join(dir, split+".jsonl.gz"), []byte("fake "+split), 0o644)
	}
	so.Reset()
	se.Reset()
	if code := run([]string{"list", "-data", root}, &so, &se); code != 1 {
		t.Fatalf("exit %d, want 1\n%s", code, so.String())
	}
	for _, split := range []string{"train", "val", "test"} {
		if !strings.Contains(se.String(), filepath.Join(dir, split+".jsonl.gz")+": present but does NOT match") {
			t.Errorf("no mismatch reported for %s:\n%s", split, se.String())
		}
	}
	for _, w := range []string{"peptides-func/train.jsonl.gz (JSON Lines graphs, read before the archive's files; not fetched)",
		"OGB's smiles2graph rules", "not downloadable from these machines", "sha256: 9b89015830dfafe88952d67c2738cbeb53eee00ca18c860ef0b3f6ca843add8c",
		"size:   6259048 bytes", "peptides-func/raw/peptide_multi_class_dataset.csv.gz (LRGB raw CSV; not fetched)", "missing (" + filepath.Join(dir, "raw", "peptide_multi_class_dataset.csv.gz") + ")"} {
		if !strings.Contains(so.String(), w) {
			t.Errorf("list lacks %q", w)
		}
	}
	if strings.Contains(so.String(), "peptides-struct/train.jsonl.gz") {
		t.Error("peptides-struct lists JSON Lines files")
	}
}

// TestListSharedPeptides: the shared data folder's Peptides-func files match the sums of the
// registry. Skipped where the folder does not hold them.
func TestListSharedPeptides(t *testing.T) {
	dir := testdata.Dir(t)
	if _, err := os.Stat(filepath.Join(dir, "peptides-func", "train.jsonl.gz")); err != nil {
		t.Skipf("no Peptides-func JSON Lines files in %s", dir)
	}
	var so, se bytes.Buffer
	run([]string{"list", "-data", dir}, &so, &se) // other datasets' files are not this test's
	for _, f := range download.LocalFiles("peptides-func") {
		head := path.Join(f.Dest, f.Name) + " (" + f.Kind + "; not fetched)\n"
		i := strings.Index(so.String(), head)
		if i < 0 {
			t.Errorf("list lacks %q", head)
			continue
		}
		if lines := strings.Split(so.String()[i:], "\n"); len(lines) < 5 || lines[4] != "    state:  present, verified" {
			t.Errorf("%s: %q, want present, verified", f.Name, lines[min(4, len(lines)-1)])
		}
	}
	if strings.Contains(se.String(), "peptides-func") {
		t.Errorf("stderr %s", se.String())
	}
}
