package gpucheck

import (
	"archive/tar"
	"compress/gzip"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rewiregnn/rewiregnn/cuda/emu"
	"github.com/rewiregnn/rewiregnn/data"
	"github.com/rewiregnn/rewiregnn/internal/testdata"
)

const maxArchive = 50 * 1000 * 1000 // bytes, as in the script

// Steps in order; emu: what each must report under -emu (PASS: it ran its emulated
// counterpart; SKIP: it needs the hardware).
var steps = []struct{ name, emu string }{
	{"env", "SKIP"}, {"gpuinfo", "SKIP"}, {"ops", "PASS"}, {"large", "SKIP"}, {"equiv", "PASS"},
	{"track", "PASS"}, {"train", "SKIP"}, {"memcheck", "SKIP"}, {"racecheck", "SKIP"}, {"bench", "PASS"},
	{"compute70", "SKIP"},
}

// TestBundleRunsEmulated builds the bundle (scripts/gpu-check.sh build), checks its size and
// members, runs it on the emulated GPU (run ARCHIVE OUT -emu -quick) and reads the
// summary. About a minute on 2 cores (the build is most of it); skipped under -short.
func TestBundleRunsEmulated(t *testing.T) {
	if testing.Short() {
		t.Skip("builds 6 binaries and runs the bundle (about a minute): skipped under -short")
	}
	for _, tool := range []string{"bash", "tar", "xz", "timeout", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not on PATH: %v", tool, err)
		}
	}
	if err := emu.Skip(); err != nil {
		t.Skip(err)
	}
	dataDir := testdata.Dir(t)
	if _, err := os.Stat(filepath.Join(dataDir, "zinc", "train.jsonl.gz")); err != nil {
		t.Skipf("no ZINC data: %v", err)
	}
	script, err := filepath.Abs(filepath.Join("..", "gpu-check.sh"))
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	env := append(os.Environ(), data.EnvDataDir+"="+dataDir, "TMPDIR="+tmp, "GPU_CHECK_EMU=", "GPU_CHECK_KEEP=",
		// The steps' limits are the GPU machine's; a test must not fail for a slow machine.
		"GPU_CHECK_LIMIT_SCALE=10")

	// build
	cmd := exec.Command("bash", script, "build", filepath.Join(tmp, "bundle"))
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	t.Logf("build:\n%s", lastLines(string(out), 2))
	archive := filepath.Join(tmp, "bundle", "gpu-check.tar.xz")
	st, err := os.Stat(archive)
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() > maxArchive {
		t.Fatalf("archive is %d bytes, over %d", st.Size(), maxArchive)
	}
	if !strings.Contains(string(out), archive) {
		t.Errorf("build does not print the archive's path:\n%s", out)
	}
	list, err := exec.Command("tar", "-tJf", archive).Output()
	if err != nil {
		t.Fatal(err)
	}
	members := map[string]bool{}
	for _, m := range strings.Fields(string(list)) {
		members[strings.TrimPrefix(m, "./")] = true
	}
	for _, want := range []string{"gpu-check/gpu-check.sh", "gpu-check/BUILD-INFO",
		"gpu-check/bin/gpuinfo", "gpu-check/bin/gpubench", "gpu-check/bin/train",
		"gpu-check/cuda/cuda.test", "gpu-check/gpu/gpu.test", "gpu-check/train/train.test",
		"gpu-check/data/zinc/atom_types.json", "gpu-check/data/zinc/train.jsonl.gz",
		"gpu-check/data/zinc/val.jsonl.gz", "gpu-check/data/zinc/test.jsonl.gz"} {
		if !members[want] {
			t.Errorf("archive lacks %s; it holds:\n%s", want, list)
		}
	}

	// The compute70 step's NVRTC: bundled where the build found one of CUDA 11 or 12 (it says
	// which), with its builtins beside it.
	if strings.Contains(string(out), "bundled NVRTC") {
		var lib, builtins bool
		for m := range members {
			lib = lib || strings.HasPrefix(m, "gpu-check/nvrtc-compute70/libnvrtc.so.")
			builtins = builtins || strings.HasPrefix(m, "gpu-check/nvrtc-compute70/libnvrtc-builtins.so.")
		}
		if !lib || !builtins {
			t.Errorf("the build bundled an NVRTC, but the archive lacks it or its builtins:\n%s", list)
		}
	} else if !strings.Contains(string(out), "the compute70 step will SKIP") {
		t.Errorf("the build says neither that it bundled an NVRTC nor that it found none:\n%s", out)
	}

	// run -emu -quick
	outDir := filepath.Join(tmp, "out")
	cmd = exec.Command("bash", script, "run", archive, outDir, "-emu", "-quick")
	cmd.Env = env
	out, err = cmd.CombinedOutput()
	if err != nil {
		t.Errorf("run -emu -quick: %v\n%s", err, out)
	}
	sum, err := os.ReadFile(filepath.Join(outDir, "summary.txt"))
	if err != nil {
		t.Fatalf("no summary: %v\n%s", err, out)
	}
	t.Logf("summary.txt:\n%s", sum)
	status := map[string]string{}
	for _, line := range strings.Split(string(sum), "\n") {
		f := strings.Fields(line)
		if len(f) >= 3 && len(f[0]) == 2 && f[0] >= "01" && f[0] <= "99" {
			status[f[1]] = f[2]
		}
	}
	logs := readTarGz(t, filepath.Join(outDir, "logs.tar.gz"))
	for i, s := range steps {
		if got := status[s.name]; got != s.emu {
			t.Errorf("step %s: %q in the summary, want %s", s.name, got, s.emu)
		}
		log := filepath.Base(stepLog(i, s.name))
		if _, err := os.Stat(filepath.Join(outDir, log)); err != nil {
			t.Errorf("step %s: %v", s.name, err)
		}
		if !logs[log] {
			t.Errorf("logs.tar.gz lacks %s", log)
		}
	}
	if len(status) != len(steps) {
		t.Errorf("%d steps in the summary, want %d", len(status), len(steps))
	}
	if !logs["summary.txt"] {
		t.Error("logs.tar.gz lacks summary.txt")
	}
	if !strings.Contains(string(sum), "RESULT: OK") {
		t.Error("summary does not end in RESULT: OK")
	}
	// The emulated bench measured both of its settings.
	if b, err := os.ReadFile(filepath.Join(outDir, "bench.jsonl")); err != nil || strings.Count(string(b), `"seconds_per_epoch"`) != 2 || strings.Contains(string(b), `"error"`) {
		t.Errorf("bench.jsonl: %v\n%s", err, b)
	}
}

func stepLog(i int, name string) string {
	return string(rune('0'+(i+1)/10)) + string(rune('0'+(i+1)%10)) + "-" + name + ".log"
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// readTarGz returns the base names of the files in a .tar.gz.
func readTarGz(t *testing.T, path string) map[string]bool {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(z)
	names := map[string]bool{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return names
		}
		if err != nil {
			t.Fatal(err)
		}
		names[filepath.Base(h.Name)] = true
	}
}
