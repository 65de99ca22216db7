package download

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// zipOf builds a zip holding the files (name, content pairs).
func zipOf(t *testing.T, files ...string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for i := 0; i+1 < len(files); i += 2 {
		w, err := zw.Create(files[i])
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(files[i+1])); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// sumOf is the hex SHA-256 of b.
func sumOf(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// server serves an in-memory file (Range honoured through http.ServeContent) unless a test's
// hook answers first, and records the Range header of every request.
type server struct {
	*httptest.Server
	mu     sync.Mutex
	body   []byte
	ranges []string
	hook   func(w http.ResponseWriter, r *http.Request, n int) bool // n: 0-based request number
}

func newServer(t *testing.T, body []byte) *server {
	s := &server{body: body}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		n := len(s.ranges)
		s.ranges = append(s.ranges, r.Header.Get("Range"))
		body, hook := s.body, s.hook
		s.mu.Unlock()
		if hook != nil && hook(w, r, n) {
			return
		}
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(body))
	}))
	t.Cleanup(s.Close)
	return s
}

// seen returns the Range headers of the requests so far ("" for none).
func (s *server) seen() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.ranges...)
}

// set replaces the served file.
func (s *server) set(body []byte) {
	s.mu.Lock()
	s.body = body
	s.mu.Unlock()
}

// archive describes the file the server serves, saved as demo/pyg/demo.zip.
func (s *server) archive(sum string, unzip bool) Archive {
	return Archive{Dataset: "demo", Name: "demo.zip", URL: s.URL + "/files/demo.zip?dl=1", SHA256: sum, Unzip: unzip, Dest: "demo/pyg"}
}

// opts are fast test options; log collects the warnings.
func opts(log *bytes.Buffer) Options {
	o := Options{Backoff: time.Millisecond, Stall: 5 * time.Second}
	if log != nil {
		o.Log = log
	}
	return o
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func mustNotExist(t *testing.T, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s exists (err %v)", p, err)
		}
	}
}

func TestFetchKnownSumUnzips(t *testing.T) {
	body := zipOf(t, "molecules/a.txt", "alpha", "molecules/sub/b.txt", "beta")
	s := newServer(t, body)
	dir := t.TempDir()
	a := s.archive(strings.ToUpper(sumOf(body)), true)
	a.Size = int64(len(body))
	res, err := Fetch(context.Background(), dir, a, opts(nil))
	if err != nil {
		t.Fatal(err)
	}
	dest := filepath.Join(dir, "demo", "pyg")
	if res.Path != filepath.Join(dest, "demo.zip") || res.Skipped || res.Recorded || !res.Unpacked || res.SHA256 != sumOf(body) {
		t.Errorf("result %+v", res)
	}
	if readFile(t, res.Path) != string(body) || readFile(t, filepath.Join(dest, "molecules", "sub", "b.txt")) != "beta" {
		t.Error("wrong file or extraction")
	}
	if got := readFile(t, res.Path+unpackedSuffix); got != sumOf(body)+"\n" {
		t.Errorf("marker %q", got)
	}
	mustNotExist(t, res.Path+partSuffix, filepath.Join(dest, lockName), filepath.Join(dest, SumsFile))
	if st, err := Inspect(dir, a); err != nil || !st.Verified || !st.Unpacked || st.Recorded {
		t.Errorf("inspect %+v %v", st, err)
	}
}

func TestChecksumMismatch(t *testing.T) {
	s := newServer(t, []byte("the wrong file"))
	dir := t.TempDir()
	want := sumOf([]byte("the right file"))
	_, err := Fetch(context.Background(), dir, s.archive(want, false), opts(nil))
	if err == nil {
		t.Fatal("no error")
	}
	for _, w := range []string{s.URL + "/files/demo.zip", want, sumOf([]byte("the wrong file")), "checksum mismatch"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error lacks %q: %v", w, err)
		}
	}
	p := filepath.Join(dir, "demo", "pyg", "demo.zip")
	mustNotExist(t, p, p+partSuffix)
}

func TestSizeMismatch(t *testing.T) {
	s := newServer(t, []byte("twelve bytes"))
	a := s.archive("", false)
	a.Size = 5
	_, err := Fetch(context.Background(), t.TempDir(), a, opts(nil))
	if err == nil || !strings.Contains(err.Error(), "expected 5 bytes, got 6") {
		t.Fatalf("error %v", err) // one byte past the size is enough to fail
	}
}

func TestTruncatedTransferResumes(t *testing.T) {
	body := bytes.Repeat([]byte("0123456789"), 5000)
	half := len(body) / 2
	s := newServer(t, body)
	s.hook = func(w http.ResponseWriter, r *http.Request, n int) bool {
		if n > 0 {
			return false
		}
		w.Header().Set("Content-Length", fmt.Sprint(len(body)))
		w.WriteHeader(http.StatusOK)
		w.Write(body[:half])
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler) // the connection drops after half the body
	}
	var log bytes.Buffer
	o := opts(&log)
	o.Retries = 1
	res, err := Fetch(context.Background(), t.TempDir(), s.archive(sumOf(body), false), o)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.seen(); len(got) != 2 || got[0] != "" || got[1] != fmt.Sprintf("bytes=%d-", half) {
		t.Errorf("ranges %q, want a resume from %d", got, half)
	}
	if !res.Resumed || readFile(t, res.Path) != string(body) || !strings.Contains(log.String(), "retrying") {
		t.Errorf("result %+v, log %s", res, log.String())
	}
}

func TestTruncatedWithoutRetryKeepsPart(t *testing.T) {
	body := bytes.Repeat([]byte("x"), 1000)
	s := newServer(t, body)
	s.hook = func(w http.ResponseWriter, r *http.Request, n int) bool {
		w.Header().Set("Content-Length", "1000")
		w.Write(body[:400])
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	}
	dir := t.TempDir()
	_, err := Fetch(context.Background(), dir, s.archive("", false), opts(nil))
	var fe *Error
	if !errors.As(err, &fe) || fe.Unreachable || !strings.Contains(err.Error(), "unexpected EOF") {
		t.Fatalf("error %v", err)
	}
	p := filepath.Join(dir, "demo", "pyg", "demo.zip")
	if fi, err := os.Stat(p + partSuffix); err != nil || fi.Size() != 400 {
		t.Errorf(".part: %v %v", fi, err)
	}
	mustNotExist(t, p)
}

func TestServerIgnoringRangeRestarts(t *testing.T) {
	body := []byte("the whole file, sent in full every time")
	s := newServer(t, body)
	s.hook = func(w http.ResponseWriter, r *http.Request, n int) bool {
		w.Write(body) // 200 whatever the Range
		return true
	}
	dir := t.TempDir()
	a := s.archive(sumOf(body), false)
	os.MkdirAll(filepath.Join(dir, "demo", "pyg"), 0o755)
	os.WriteFile(a.Path(dir)+partSuffix, []byte("garbage!!"), 0o644)
	var log bytes.Buffer
	res, err := Fetch(context.Background(), dir, a, opts(&log))
	if err != nil {
		t.Fatal(err)
	}
	if got := s.seen(); len(got) != 1 || got[0] != "bytes=9-" {
		t.Errorf("ranges %q", got)
	}
	if readFile(t, res.Path) != string(body) || !strings.Contains(log.String(), "ignored the range") {
		t.Errorf("file %q, log %s", readFile(t, res.Path), log.String())
	}
}

func TestCompletePartAnswered416(t *testing.T) {
	body := []byte("complete already")
	s := newServer(t, body)
	dir := t.TempDir()
	a := s.archive(sumOf(body), false)
	os.MkdirAll(filepath.Join(dir, "demo", "pyg"), 0o755)
	os.WriteFile(a.Path(dir)+partSuffix, body, 0o644)
	res, err := Fetch(context.Background(), dir, a, opts(nil))
	if err != nil {
		t.Fatal(err)
	}
	if got := s.seen(); len(got) != 1 || got[0] != fmt.Sprintf("bytes=%d-", len(body)) || !res.Resumed {
		t.Errorf("ranges %q, result %+v", got, res)
	}
	// A .part longer than the file: 416 with another size, so it starts over.
	os.Remove(res.Path)
	os.WriteFile(a.Path(dir)+partSuffix, append(body, "junk"...), 0o644)
	if res, err = Fetch(context.Background(), dir, a, opts(nil)); err != nil || readFile(t, res.Path) != string(body) {
		t.Fatalf("%v %+v", err, res)
	}
}

func TestResumedPartThatFailsStartsOver(t *testing.T) {
	body := []byte("0123456789abcdef")
	s := newServer(t, body)
	dir := t.TempDir()
	a := s.archive(sumOf(body), false)
	os.MkdirAll(filepath.Join(dir, "demo", "pyg"), 0o755)
	os.WriteFile(a.Path(dir)+partSuffix, []byte("XXXXXXXX"), 0o644) // stale prefix of another file
	res, err := Fetch(context.Background(), dir, a, opts(nil))
	if err != nil || readFile(t, res.Path) != string(body) {
		t.Fatalf("%v %+v", err, res)
	}
	if got := s.seen(); len(got) != 2 || got[0] != "bytes=8-" || got[1] != "" {
		t.Errorf("ranges %q", got)
	}
}

func TestServerErrorIsRetried(t *testing.T) {
	body := []byte("after a hiccup")
	s := newServer(t, body)
	s.hook = func(w http.ResponseWriter, r *http.Request, n int) bool {
		if n == 0 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return true
		}
		return false
	}
	o := opts(nil)
	o.Retries = 2
	if _, err := Fetch(context.Background(), t.TempDir(), s.archive(sumOf(body), false), o); err != nil {
		t.Fatal(err)
	}
}

func TestTrustOnFirstUse(t *testing.T) {
	v1 := []byte("first version")
	s := newServer(t, v1)
	dir := t.TempDir()
	a := s.archive("", false)
	var log bytes.Buffer
	res, err := Fetch(context.Background(), dir, a, opts(&log))
	if err != nil {
		t.Fatal(err)
	}
	sums := filepath.Join(dir, "demo", "pyg", SumsFile)
	if got := readFile(t, sums); got != sumOf(v1)+"  demo.zip\n" || !res.Recorded {
		t.Errorf("SHA256SUMS %q, result %+v", got, res)
	}
	if !strings.Contains(log.String(), "could not be checked") || len(res.Warnings) != 1 {
		t.Errorf("warning: %q", log.String())
	}
	if st, err := Inspect(dir, a); err != nil || !st.Verified || !st.Recorded {
		t.Errorf("inspect %+v %v", st, err)
	}
	// A later run checks against the recorded sum: a changed file is refused.
	os.Remove(res.Path)
	s.set([]byte("second version"))
	_, err = Fetch(context.Background(), dir, a, opts(nil))
	if err == nil || !strings.Contains(err.Error(), sumOf(v1)) || !strings.Contains(err.Error(), "recorded") {
		t.Fatalf("error %v", err)
	}
	mustNotExist(t, res.Path, res.Path+partSuffix)
	if got := readFile(t, sums); got != sumOf(v1)+"  demo.zip\n" {
		t.Errorf("SHA256SUMS changed: %q", got)
	}
}

func TestNotFoundNamesURL(t *testing.T) {
	s := newServer(t, nil)
	s.hook = func(w http.ResponseWriter, r *http.Request, n int) bool {
		http.NotFound(w, r)
		return true
	}
	dir := t.TempDir()
	o := opts(nil)
	o.Retries = 3
	_, err := Fetch(context.Background(), dir, s.archive("", false), o)
	var fe *Error
	if !errors.As(err, &fe) || fe.Unreachable {
		t.Fatalf("error %v", err)
	}
	for _, w := range []string{"demo:", s.URL + "/files/demo.zip?dl=1", "404", filepath.Join(dir, "demo", "pyg", "demo.zip")} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error lacks %q: %v", w, err)
		}
	}
	if n := len(s.seen()); n != 1 {
		t.Errorf("%d requests: a 404 is not retried", n)
	}
}

func TestUnreachableSaysWhatToDownload(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	dir := t.TempDir()
	a := Archive{Dataset: "zinc", Name: "molecules.zip", URL: "http://" + addr + "/molecules.zip", Dest: "zinc/pyg", Manual: manualDropbox}
	o := opts(nil)
	o.Retries = 1
	_, err = Fetch(context.Background(), dir, a, o)
	var fe *Error
	if !errors.As(err, &fe) || !fe.Unreachable {
		t.Fatalf("error %v", err)
	}
	want := "zinc: cannot reach " + a.URL + ": "
	path := filepath.Join(dir, "zinc", "pyg", "molecules.zip")
	for _, w := range []string{want, "refused", manualDropbox, "save it as " + path + ", then run the command again"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error lacks %q: %v", w, err)
		}
	}
	mustNotExist(t, path, path+partSuffix)

	// Saved by hand as the message says: the next run records its sum and extracts it.
	body := zipOf(t, "molecules/train.pickle", "data")
	os.WriteFile(path, body, 0o644)
	a.Unzip = true
	res, err := Fetch(context.Background(), dir, a, o)
	if err != nil || !res.Skipped || !res.Recorded || !res.Unpacked || res.SHA256 != sumOf(body) {
		t.Fatalf("%v %+v", err, res)
	}
	if readFile(t, filepath.Join(dir, "zinc", "pyg", "molecules", "train.pickle")) != "data" {
		t.Error("not extracted")
	}
}

func TestUnsafeEntriesRefused(t *testing.T) {
	link := func() []byte {
		var buf bytes.Buffer
		zw := zip.NewWriter(&buf)
		h := &zip.FileHeader{Name: "data/link"}
		h.SetMode(fs.ModeSymlink | 0o777)
		w, _ := zw.CreateHeader(h)
		w.Write([]byte("/etc/passwd"))
		zw.Close()
		return buf.Bytes()
	}
	for _, c := range []struct {
		name string
		body []byte
		want string
	}{
		{"slip", zipOf(t, "ok.txt", "fine", "../evil.txt", "pwned"), "zip slip"},
		{"deep slip", zipOf(t, "a/../../evil.txt", "pwned"), "zip slip"},
		{"absolute", zipOf(t, "/tmp/evil.txt", "pwned"), "zip slip"},
		{"symlink", link(), "symbolic link"},
		{"reserved", zipOf(t, SumsFile, "x"), "downloader"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newServer(t, c.body)
			dir := t.TempDir()
			_, err := Fetch(context.Background(), dir, s.archive(sumOf(c.body), true), opts(nil))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v", err)
			}
			dest := filepath.Join(dir, "demo", "pyg")
			mustNotExist(t, filepath.Join(dir, "demo", "evil.txt"), filepath.Join(dest, "ok.txt"),
				filepath.Join(dest, "data"), filepath.Join(dest, "demo.zip"+unpackedSuffix))
			if left, _ := filepath.Glob(filepath.Join(dest, unpackPrefix+"*")); len(left) > 0 {
				t.Errorf("temporary folders left: %v", left)
			}
		})
	}
}

func TestRerunSkips(t *testing.T) {
	body := zipOf(t, "data/x.txt", "v1")
	s := newServer(t, body)
	dir := t.TempDir()
	a := s.archive("", true)
	if _, err := Fetch(context.Background(), dir, a, opts(nil)); err != nil {
		t.Fatal(err)
	}
	extracted := filepath.Join(dir, "demo", "pyg", "data", "x.txt")
	os.WriteFile(extracted, []byte("edited"), 0o644) // would be overwritten by a new extraction
	res, err := Fetch(context.Background(), dir, a, opts(nil))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Skipped || !res.UnpackSkipped || res.Unpacked || res.Recorded || len(s.seen()) != 1 {
		t.Errorf("result %+v, %d requests", res, len(s.seen()))
	}
	if got := readFile(t, extracted); got != "edited" {
		t.Errorf("extracted again: %q", got)
	}
}

func TestNewArchiveReplacesExtraction(t *testing.T) {
	v1 := zipOf(t, "data/old.txt", "1", "top.txt", "1")
	v2 := zipOf(t, "data/new.txt", "2", "top.txt", "2")
	s := newServer(t, v1)
	dir := t.TempDir()
	if _, err := Fetch(context.Background(), dir, s.archive(sumOf(v1), true), opts(nil)); err != nil {
		t.Fatal(err)
	}
	s.set(v2) // the published sum moves to a new release
	var log bytes.Buffer
	res, err := Fetch(context.Background(), dir, s.archive(sumOf(v2), true), opts(&log))
	if err != nil {
		t.Fatal(err)
	}
	dest := filepath.Join(dir, "demo", "pyg")
	if !res.Unpacked || readFile(t, filepath.Join(dest, "top.txt")) != "2" || readFile(t, filepath.Join(dest, "data", "new.txt")) != "2" {
		t.Errorf("result %+v", res)
	}
	mustNotExist(t, filepath.Join(dest, "data", "old.txt"))
	if !strings.Contains(log.String(), "downloading it again") {
		t.Errorf("log %q", log.String())
	}
}

func TestProgress(t *testing.T) {
	body := bytes.Repeat([]byte("p"), 3<<20)
	s := newServer(t, body)
	var bar bytes.Buffer
	clock := time.Unix(0, 0)
	o := opts(nil)
	o.Progress, o.ProgressEvery = &bar, time.Second
	o.Now = func() time.Time { clock = clock.Add(time.Second); return clock }
	if _, err := Fetch(context.Background(), t.TempDir(), s.archive("", false), o); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(bar.String(), "\n"), "\n")
	last := lines[len(lines)-1]
	if len(lines) < 2 || !strings.HasPrefix(last, "demo.zip  3.0 MiB / 3.0 MiB  100%  ") || !strings.HasSuffix(last, "/s") {
		t.Errorf("progress:\n%s", bar.String())
	}
}

func TestLock(t *testing.T) {
	body := []byte("locked")
	s := newServer(t, body)
	dir := t.TempDir()
	a := s.archive(sumOf(body), false)
	lockPath := filepath.Join(dir, "demo", "pyg", lockName)
	os.MkdirAll(filepath.Dir(lockPath), 0o755)
	host, _ := os.Hostname()
	// A live process (this one) holds it.
	os.WriteFile(lockPath, []byte(fmt.Sprintf("pid=%d host=%s since=now\n", os.Getpid(), host)), 0o644)
	_, err := Fetch(context.Background(), dir, a, opts(nil))
	if err == nil || !strings.Contains(err.Error(), "is held by process") {
		t.Fatalf("error %v", err)
	}
	// Its process is gone: taken over.
	os.WriteFile(lockPath, []byte(fmt.Sprintf("pid=%d host=%s since=then\n", 1<<30, host)), 0o644)
	var log bytes.Buffer
	if _, err := Fetch(context.Background(), dir, a, opts(&log)); err != nil || !strings.Contains(log.String(), "is gone") {
		t.Fatalf("%v, log %q", err, log.String())
	}
	mustNotExist(t, lockPath)
	// Live but untouched for two hours: taken over.
	os.Remove(a.Path(dir))
	os.WriteFile(lockPath, []byte(fmt.Sprintf("pid=%d host=%s since=then\n", os.Getpid(), host)), 0o644)
	old := time.Now().Add(-2 * time.Hour)
	os.Chtimes(lockPath, old, old)
	log.Reset()
	if _, err := Fetch(context.Background(), dir, a, opts(&log)); err != nil || !strings.Contains(log.String(), "more than 1h0m0s") {
		t.Fatalf("%v, log %q", err, log.String())
	}
}

func TestBadArchiveRefused(t *testing.T) {
	for _, a := range []Archive{
		{Dataset: "d", Name: "../x.zip", URL: "http://h/x", Dest: "d"},
		{Dataset: "d", Name: "x.zip", URL: "http://h/x", Dest: "../d"},
		{Dataset: "d", Name: "x.zip", URL: "ftp://h/x", Dest: "d"},
		{Dataset: "d", Name: "x.zip", URL: "http://h/x", Dest: "d", SHA256: "abc"},
		{Dataset: "d", Name: SumsFile, URL: "http://h/x", Dest: "d"},
	} {
		if _, err := Fetch(context.Background(), t.TempDir(), a, opts(nil)); err == nil {
			t.Errorf("%+v: no error", a)
		}
	}
}

func TestRegistry(t *testing.T) {
	if got := strings.Join(Datasets(), " "); got != "zinc aqsol mnist cifar10 peptides-func peptides-struct" {
		t.Errorf("datasets %q", got)
	}
	if got := strings.Join(PaperDatasets(), " "); got != "zinc aqsol mnist cifar10" {
		t.Errorf("the paper's datasets %q", got)
	}
	for _, name := range []string{"peptides-func", "peptides-struct"} {
		as, err := Archives(name)
		folder := strings.ReplaceAll(name, "-", "")
		if err != nil || len(as) != 1 || as[0].Name != folder+".zip" || !as[0].Unzip || as[0].Dest != name+"/pyg" ||
			as[0].Manual != manualDropbox || as[0].SHA256 != "" || !strings.Contains(as[0].URL, "dropbox.com") {
			t.Errorf("%s: %+v %v", name, as, err)
		}
	}
	for _, d := range Datasets() {
		as, err := Archives(d)
		if err != nil || len(as) == 0 {
			t.Fatalf("%s: %v", d, err)
		}
		for _, a := range as {
			if err := a.validate(); err != nil || a.Manual == "" {
				t.Errorf("%+v: %v", a, err)
			}
		}
	}
	if zinc, _ := Archives("zinc"); len(zinc) != 4 || zinc[0].Name != "molecules.zip" || !zinc[0].Unzip || zinc[3].Name != "test.index" {
		t.Errorf("zinc %+v", zinc)
	}
	if _, err := Archives("qm9"); err == nil || !strings.Contains(err.Error(), "zinc, aqsol, mnist, cifar10, peptides-func, peptides-struct") {
		t.Errorf("unknown dataset: %v", err)
	}
}

func TestFormatSize(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1536: "1.5 KiB", 3 << 20: "3.0 MiB", 5 << 30: "5.0 GiB"} {
		if got := FormatSize(n); got != want {
			t.Errorf("%d: %q, want %q", n, got, want)
		}
	}
}
