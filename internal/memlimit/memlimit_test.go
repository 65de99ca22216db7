package memlimit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fake writes a /proc and cgroup tree under a temporary folder: files maps paths relative to it
// to their contents; "{root}" in contents is replaced by the folder.
func fake(t *testing.T, files map[string]string) Files {
	t.Helper()
	root := t.TempDir()
	for p, s := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(strings.ReplaceAll(s, "{root}", root)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	j := func(p string) string { return filepath.Join(root, p) }
	return Files{Cgroup: j("proc/cgroup"), MountInfo: j("proc/mountinfo"), MemInfo: j("proc/meminfo"), Status: j("proc/status")}
}

const (
	meminfo = "MemTotal:       24683620 kB\nMemFree:         1000000 kB\nMemAvailable:   20000000 kB\n"
	status  = "Name:\ttrain\nVmHWM:\t  300000 kB\nVmRSS:\t  200000 kB\n"
	v2mount = "30 22 0:27 / {root}/cg2 rw,relatime - cgroup2 cgroup2 rw\n"
	v1mount = "34 30 0:31 / {root}/cg1/memory rw,relatime - cgroup cgroup rw,memory\n"
)

func TestReadCgroupV2(t *testing.T) {
	f := fake(t, map[string]string{
		"proc/cgroup": "0::/job/step\n", "proc/mountinfo": v2mount, "proc/meminfo": meminfo, "proc/status": status,
		"cg2/job/memory.max": "8589934592\n", "cg2/job/memory.current": "1073741824\n", // 8 GiB, 1 GiB used
		"cg2/job/step/memory.max": "max\n", "cg2/job/step/memory.current": "536870912\n",
	})
	l, err := Read(f)
	if err != nil {
		t.Fatal(err)
	}
	want := int64(7<<30) + 200000<<10 // the parent's limit less its usage, plus the process's own RSS
	if l.Bytes != want || !strings.Contains(l.Source, "cgroup v2") || !strings.Contains(l.Source, filepath.Join("cg2", "job")) {
		t.Fatalf("got %d from %q, want %d from the parent cgroup", l.Bytes, l.Source, want)
	}
}

func TestReadCgroupV1(t *testing.T) {
	f := fake(t, map[string]string{
		"proc/cgroup": "4:memory:/ci/x\n3:cpu:/\n", "proc/mountinfo": v1mount, "proc/meminfo": meminfo, "proc/status": status,
		"cg1/memory/ci/x/memory.limit_in_bytes": "9223372036854771712\n", "cg1/memory/ci/x/memory.usage_in_bytes": "100\n",
		"cg1/memory/ci/memory.limit_in_bytes": "4294967296\n", "cg1/memory/ci/memory.usage_in_bytes": "1073741824\n",
		"cg1/memory/memory.limit_in_bytes": "9223372036854771712\n",
	})
	l, err := Read(f)
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(3<<30) + 200000<<10; l.Bytes != want || !strings.Contains(l.Source, "cgroup v1") {
		t.Fatalf("got %d from %q, want %d from cgroup v1", l.Bytes, l.Source, want)
	}
}

// MemAvailable wins when it is smaller than the cgroup's room, and alone without cgroups.
func TestReadMemAvailable(t *testing.T) {
	f := fake(t, map[string]string{
		"proc/cgroup": "0::/\n", "proc/mountinfo": v2mount, "proc/meminfo": meminfo, "proc/status": status,
		"cg2/memory.max": "107374182400\n", "cg2/memory.current": "0\n", // 100 GiB
	})
	l, err := Read(f)
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(20000000+200000) << 10; l.Bytes != want || !strings.Contains(l.Source, "MemAvailable") {
		t.Fatalf("got %d from %q, want %d from MemAvailable", l.Bytes, l.Source, want)
	}
	f = fake(t, map[string]string{"proc/meminfo": meminfo})
	if l, err := Read(f); err != nil || l.Bytes != 20000000<<10 {
		t.Fatalf("without cgroups or status: %d, %v", l.Bytes, err)
	}
}

func TestReadErrors(t *testing.T) {
	for name, files := range map[string]map[string]string{
		"none":        {},
		"bad meminfo": {"proc/meminfo": "MemAvailable: lots\n"},
		"bad limit": {"proc/cgroup": "0::/\n", "proc/mountinfo": v2mount, "proc/meminfo": meminfo,
			"cg2/memory.max": "12 GB\n"},
		"bad cgroup": {"proc/cgroup": "garbage\n", "proc/meminfo": meminfo},
	} {
		if _, err := Read(fake(t, files)); err == nil {
			t.Errorf("%s: no error", name)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
}

func TestParseSize(t *testing.T) {
	for s, want := range map[string]int64{"16GiB": 16 << 30, "16G": 16 << 30, "1.5GiB": 3 << 29, "800MB": 800e6, "512": 512, " 2 MiB ": 2 << 20} {
		if got, err := ParseSize(s); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", s, got, err, want)
		}
	}
	for _, s := range []string{"", "GiB", "-1G", "0", "12 parsecs", "1e30TB"} {
		if _, err := ParseSize(s); err == nil {
			t.Errorf("ParseSize(%q): no error", s)
		}
	}
	if got := Format(3 << 29); got != "1.5 GiB" {
		t.Errorf("Format = %q", got)
	}
}
