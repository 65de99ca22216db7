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
	"path/filepath"
	"strings"
	"testing"

	"github.com/rewiregnn/rewiregnn/download"
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
