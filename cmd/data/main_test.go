package main

import (
	"archive/zip"
	"bytes"
	"errors"
	"io"
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
		{[]string{"get"}, "name the datasets to fetch (zinc, aqsol, mnist, cifar10) or all"},
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
	oldOf, oldNames, oldHook := archivesOf, datasetNames, afterFetch
	t.Cleanup(func() { archivesOf, datasetNames, afterFetch = oldOf, oldNames, oldHook })
	datasetNames = func() []string { return []string{"demo", "gone"} }
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
