package campaign

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCollectRefreshesDocs: a collect into the repository's own docs/results remakes the table of
// each grid whose runs/ gained a finished run and rewrites the docs' quoted figures (cmd/docfacts
// -w); one into a CAMPAIGN_RESULTS elsewhere touches neither. A stand-in repository holds the
// real campaign.sh and lib.sh, a recording tables.sh and go, and a hand-made pack of one finished
// run (no trainer is built: the collect verb needs none).
func TestCollectRefreshesDocs(t *testing.T) {
	for _, tool := range []string{"bash", "tar", "gzip", "sha256sum"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not on PATH: %v", tool, err)
		}
	}
	real, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	for _, elsewhere := range []bool{false, true} {
		tmp := t.TempDir()
		repo, logf := filepath.Join(tmp, "repo"), filepath.Join(tmp, "calls.txt")
		recorder := "#!/usr/bin/env bash\necho \"$(basename \"$0\") $*\" >>" + logf + "\n"
		files := map[string]string{
			"go.mod":                         "module github.com/rewiregnn/rewiregnn\n",
			"scripts/tables.sh":              recorder,
			"bin/go":                         recorder,
			"configs/grids/table-x.yaml":     "name: table-x\n",
			"configs/grids/table-other.yaml": "name: table-other\n",
		}
		for _, s := range []string{"campaign.sh", "lib.sh"} {
			b, err := os.ReadFile(filepath.Join(real, "scripts", s))
			if err != nil {
				t.Fatal(err)
			}
			files["scripts/"+s] = string(b)
		}
		pack, res := filepath.Join(tmp, "content"), "docs/results"
		if elsewhere {
			res = filepath.Join(tmp, "results")
		}
		run := "runs/table-x/x-adj-r2/seed95/"
		for name, body := range map[string]string{
			run + "config.yaml":   "name: x-adj-r2\n",
			run + "result.json":   "{\n  \"stopped_by\": \"min_lr\",\n  \"epochs\": 3,\n  \"test_metric\": 1.25\n}\n",
			run + "metrics.jsonl": "{}\n{}\n{}\n",
			"jobs.txt":            "table-x\tx-adj-r2\t95\tnew\t" + res + "/table-x\t-\t\n",
			"BUILD-INFO":          "test\n",
		} {
			files["../content/"+name] = body
		}
		for name, body := range files {
			p := filepath.Join(repo, name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		out := filepath.Join(tmp, "out")
		if err := os.MkdirAll(out, 0o755); err != nil {
			t.Fatal(err)
		}
		mk := exec.Command("bash", "-c", "sha256sum jobs.txt BUILD-INFO "+run+"* >MANIFEST.sha256 && tar -czf "+out+"/pack.tar.gz.0 .")
		mk.Dir = pack
		if b, err := mk.CombinedOutput(); err != nil {
			t.Fatalf("making the pack: %v\n%s", err, b)
		}
		cmd := exec.Command("bash", filepath.Join(repo, "scripts", "campaign.sh"), "collect", out)
		cmd.Env = append(os.Environ(), "GO="+filepath.Join(repo, "bin", "go"), "TMPDIR="+tmp)
		if elsewhere {
			cmd.Env = append(cmd.Env, "CAMPAIGN_RESULTS="+filepath.Join(tmp, "results"))
		}
		b, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("collect (elsewhere %v): %v\n%s", elsewhere, err, b)
		}
		if !filepath.IsAbs(res) {
			res = filepath.Join(repo, res)
		}
		if _, err := os.Stat(filepath.Join(res, "table-x/runs/x-adj-r2/seed95/result.json")); err != nil {
			t.Fatalf("collect (elsewhere %v) did not merge the run: %v\n%s", elsewhere, err, b)
		}
		calls, _ := os.ReadFile(logf)
		want := "tables.sh table-x\ngo run ./cmd/docfacts -w\n"
		if elsewhere {
			want = ""
		}
		if string(calls) != want {
			t.Errorf("collect into %s: calls\n%q\nwant\n%q\noutput:\n%s", res, calls, want, b)
		}
		if !strings.Contains(string(b), "+ table-x/runs/x-adj-r2/seed95") {
			t.Errorf("collect does not list the run it added:\n%s", b)
		}
		if !elsewhere && !strings.Contains(string(b), "remaking table-x's table") {
			t.Errorf("collect does not say which table it remakes:\n%s", b)
		}
	}
}
