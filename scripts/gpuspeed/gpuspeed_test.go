package gpuspeed

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rewiregnn/rewiregnn/cuda/emu"
	"github.com/rewiregnn/rewiregnn/data"
	"github.com/rewiregnn/rewiregnn/internal/testdata"
)

// TestBundleRunsEmulated builds the bundle (scripts/gpu-speed.sh build, with this commit as
// the base so a shallow clone serves) and runs it on the emulated GPU: every variant writes
// its rows, the graphs variant replayed graphs and the eager one did not, the profiles count
// the same device operations with 4 host calls against one per operation, the concurrency
// step has its rows for K = 1 and 2, the tf32 and bf16 variants their two rows in their
// precision, the summary has both settings and the runs sharing the GPU, and a second run into
// the same folder is
// refused; -skip leaves out the steps it names and refuses an unknown one. About a minute on
// 2 cores; skipped under -short.
func TestBundleRunsEmulated(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two gpubench binaries and runs the bundle (about a minute): skipped under -short")
	}
	for _, tool := range []string{"bash", "tar", "xz", "timeout", "go", "git", "python3"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not on PATH: %v", tool, err)
		}
	}
	if err := emu.Skip(); err != nil {
		t.Skip(err)
	}
	dataDir := testdata.Dir(t)
	script, err := filepath.Abs(filepath.Join("..", "gpu-speed.sh"))
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	env := append(os.Environ(), data.EnvDataDir+"="+dataDir, "TMPDIR="+tmp)
	sh := func(args ...string) (string, error) {
		cmd := exec.Command("bash", append([]string{script}, args...)...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := sh("build", filepath.Join(tmp, "bundle"), "HEAD"); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	out := filepath.Join(tmp, "out")
	if log, err := sh("run", filepath.Join(tmp, "bundle", "gpu-speed.tar.xz"), out, "-emu", "-budget", "600"); err != nil {
		t.Fatalf("run: %v\n%s", err, log)
	}
	rows := func(variant string) []map[string]any {
		b, err := os.ReadFile(filepath.Join(out, "gpubench-"+variant+".jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		var rs []map[string]any
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var r map[string]any
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				t.Fatalf("%s: %v: %q", variant, err, line)
			}
			if r["error"] != nil {
				t.Errorf("%s %v r=%v: %v", variant, r["suite"], r["r"], r["error"])
			}
			rs = append(rs, r)
		}
		return rs
	}
	offs := map[string]string{"nofold": "scatter,bndx,gate", "nogate": "gate"} // the folds each variant turns off
	for _, v := range []string{"graphs", "eager", "base", "unroll1", "nofold", "nogate", "gradw", "tf32", "bf16"} {
		rs := rows(v)
		if len(rs) != 2 {
			t.Errorf("%s: %d rows, want zinc and superpixel", v, len(rs))
		}
		for _, r := range rs {
			if v != "base" && r["cuda_graphs"] != (v != "eager") {
				t.Errorf("%s %v: cuda_graphs %v", v, r["suite"], r["cuda_graphs"])
			}
			want := "fp32"
			if v == "tf32" || v == "bf16" {
				want = v
			}
			if v != "base" && r["precision"] != want {
				t.Errorf("%s %v: precision %v, want %s", v, r["suite"], r["precision"], want)
			}
			if off, _ := r["edge_folds_off"].(string); v != "base" && (r["edge_folds"] != (offs[v] == "") || off != offs[v]) {
				t.Errorf("%s %v: edge_folds %v, edge_folds_off %q; want the folds off to be %q", v, r["suite"], r["edge_folds"], off, offs[v])
			}
			if narrow, _ := r["narrow_gradw"].(bool); narrow != (v == "gradw") {
				t.Errorf("%s %v: narrow_gradw %v", v, r["suite"], r["narrow_gradw"])
			}
		}
	}
	counts := func(variant string) map[string]any {
		rs := rows(variant)
		if len(rs) != 1 || rs[0]["profile"] == nil {
			t.Fatalf("%s: no profile row", variant)
		}
		return rs[0]["profile"].(map[string]any)["Counts"].(map[string]any)
	}
	g, e := counts("profile-graphs"), counts("profile-eager")
	if g["DeviceOps"] != e["DeviceOps"] || g["HostCalls"].(float64) != 4 || e["HostCalls"] != e["DeviceOps"] {
		t.Errorf("profiled step: %v replayed, %v launch by launch; want the same device operations, 4 host calls replayed", g, e)
	}
	if cs := rows("concurrent"); len(cs) != 2 || cs[0]["concurrent"] != 1.0 || cs[1]["concurrent"] != 2.0 || cs[0]["ratio"] != 1.0 {
		t.Errorf("concurrent: rows %v, want K = 1 (ratio 1) and K = 2", cs)
	}
	sum, err := os.ReadFile(filepath.Join(out, "summary.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| zinc r = 1 |", "| superpixel r = 4 |", "| tf32 s/epoch (peak MiB) |", "| bf16 s/epoch (peak MiB) |", "profile-graphs zinc r = 1", "Runs sharing the GPU", "| zinc r = 1 | 2 |", "evaluation zinc r = 1: 12 graphs in 4 batches"} {
		if !strings.Contains(string(sum), want) {
			t.Errorf("summary.md lacks %q:\n%s", want, sum)
		}
	}
	if log, err := sh("run", filepath.Join(tmp, "bundle", "gpu-speed.tar.xz"), out, "-emu"); err == nil || !strings.Contains(log, "already holds a run") {
		t.Errorf("a second run into %s: %v\n%s", out, err, log)
	}

	// -skip leaves out the steps it names, and refuses a name that is no step.
	out2 := filepath.Join(tmp, "out2")
	if log, err := sh("run", filepath.Join(tmp, "bundle", "gpu-speed.tar.xz"), out2, "-emu", "-skip", "graphs,eager,base,unroll1,nofold,nogate,gradw,torch,profile-graphs,profile-eager,concurrent,tf32,bf16"); err != nil {
		t.Fatalf("run -skip: %v\n%s", err, log)
	}
	got, err := filepath.Glob(filepath.Join(out2, "gpubench-*.jsonl"))
	if err != nil || len(got) != 1 || filepath.Base(got[0]) != "gpubench-evalbig.jsonl" {
		t.Errorf("run -skip all but evalbig: rows in %v (%v), want gpubench-evalbig.jsonl alone", got, err)
	}
	if log, err := sh("run", filepath.Join(tmp, "bundle", "gpu-speed.tar.xz"), filepath.Join(tmp, "out3"), "-emu", "-skip", "graphs,nope"); err == nil || !strings.Contains(log, "no step nope") {
		t.Errorf("-skip graphs,nope: %v\n%s", err, log)
	}
}
