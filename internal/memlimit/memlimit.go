// Package memlimit finds how much memory this process may use: the smallest of the cgroup's
// limit (v2 memory.max, v1 memory.limit_in_bytes, over the cgroup and its ancestors) less what
// the cgroup already uses, and the kernel's MemAvailable, each plus what this process already
// holds. It also parses and formats byte sizes ("16GiB"). Standard library only; Linux files,
// so elsewhere Available reports that no figure was found.
package memlimit

import (
	"bufio"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Limit is an amount of memory and where it was read.
type Limit struct {
	Bytes  int64
	Source string // e.g. "cgroup v2 /sys/fs/cgroup/x/memory.max", "/proc/meminfo MemAvailable", "-memory"
}

// Files are the files Read consults; System gives Linux's own.
type Files struct {
	Cgroup    string // /proc/self/cgroup: the process's cgroup per hierarchy
	MountInfo string // /proc/self/mountinfo: where the cgroup hierarchies are mounted
	MemInfo   string // /proc/meminfo
	Status    string // /proc/self/status: the process's own resident set (VmRSS)
}

// System is the files of the running process.
var System = Files{Cgroup: "/proc/self/cgroup", MountInfo: "/proc/self/mountinfo", MemInfo: "/proc/meminfo", Status: "/proc/self/status"}

// ErrUnknown is returned (wrapped) when no source gives a figure.
var ErrUnknown = errors.New("no memory limit found")

// Available is Read(System).
func Available() (Limit, error) { return Read(System) }

// Read returns the memory this process may use in all: min over the sources of (limit − used)
// plus the process's own resident set (VmRSS), which the used figures include. A cgroup
// without a limit ("max", or v1's huge sentinel) is no source; missing files are skipped.
func Read(f Files) (Limit, error) {
	own, err := statusKB(f.Status, "VmRSS")
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return Limit{}, err
	}
	var cands []Limit
	cg, err := cgroupLimit(f)
	if err != nil {
		return Limit{}, err
	}
	if cg != nil {
		cands = append(cands, *cg)
	}
	avail, err := statusKB(f.MemInfo, "MemAvailable")
	switch {
	case err == nil:
		cands = append(cands, Limit{Bytes: avail, Source: f.MemInfo + " MemAvailable"})
	case !errors.Is(err, os.ErrNotExist):
		return Limit{}, err
	}
	if len(cands) == 0 {
		return Limit{}, fmt.Errorf("%w: no cgroup limit and no %s", ErrUnknown, f.MemInfo)
	}
	best := cands[0]
	for _, c := range cands[1:] {
		if c.Bytes < best.Bytes {
			best = c
		}
	}
	best.Bytes += own
	return best, nil
}

// Peak is this process's peak resident set (VmHWM of /proc/self/status), in bytes.
func Peak() (int64, error) { return statusKB(System.Status, "VmHWM") }

// statusKB reads a "Key:   123 kB" line of a /proc file, in bytes.
func statusKB(path, key string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	for i, line := range strings.Split(string(b), "\n") {
		rest, ok := strings.CutPrefix(line, key+":")
		if !ok {
			continue
		}
		fs := strings.Fields(rest)
		if len(fs) != 2 || fs[1] != "kB" {
			return 0, fmt.Errorf("%s:%d: %s: want \"<number> kB\", got %q", path, i+1, key, strings.TrimSpace(rest))
		}
		v, err := strconv.ParseInt(fs[0], 10, 64)
		if err != nil || v < 0 {
			return 0, fmt.Errorf("%s:%d: %s: %q is not a size in kB", path, i+1, key, fs[0])
		}
		return v << 10, nil
	}
	return 0, fmt.Errorf("%s: no %s line", path, key)
}

// cgroupLimit returns the tightest limit of the process's memory cgroup and its ancestors,
// less the cgroup's usage; nil when there is none.
func cgroupLimit(f Files) (*Limit, error) {
	groups, err := readCgroups(f.Cgroup)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	mounts, err := readMounts(f.MountInfo)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	var best *Limit
	for _, m := range mounts {
		path, ok := groups[m.version]
		if !ok {
			continue
		}
		rel, ok := strings.CutPrefix(path, m.root)
		if !ok {
			continue // the process's cgroup is not below this mount's root
		}
		dir := filepath.Join(m.point, rel)
		l, err := walkUp(dir, m.point, m.version)
		if err != nil {
			return nil, err
		}
		if l != nil && (best == nil || l.Bytes < best.Bytes) {
			best = l
		}
	}
	return best, nil
}

// The file names of each cgroup version: limit and usage.
var cgroupFiles = map[int][2]string{2: {"memory.max", "memory.current"}, 1: {"memory.limit_in_bytes", "memory.usage_in_bytes"}}

// walkUp reads the limit of dir and of every ancestor up to the mount point; the tightest, less
// that cgroup's usage, wins.
func walkUp(dir, top string, version int) (*Limit, error) {
	names := cgroupFiles[version]
	var best *Limit
	for {
		lim, err := readCgroupValue(filepath.Join(dir, names[0]))
		if err != nil {
			return nil, err
		}
		if lim >= 0 {
			used, err := readCgroupValue(filepath.Join(dir, names[1]))
			if err != nil {
				return nil, err
			}
			free := lim - max(used, 0)
			if best == nil || free < best.Bytes {
				best = &Limit{Bytes: max(free, 0), Source: fmt.Sprintf("cgroup v%d %s (%s less %s)", version, dir, names[0], names[1])}
			}
		}
		if dir == top || len(dir) <= len(top) {
			return best, nil
		}
		dir = filepath.Dir(dir)
	}
}

// unlimited is where a v1 limit means "none" (the kernel writes PAGE_COUNTER_MAX pages).
const unlimited = math.MaxInt64 / 2

// readCgroupValue reads a cgroup file holding one number, or "max"; -1 means no limit (also
// for a missing file).
func readCgroupValue(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return -1, nil
	}
	if err != nil {
		return 0, err
	}
	s := strings.TrimSpace(string(b))
	if s == "max" {
		return -1, nil
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("%s: %q is not a byte count or \"max\"", path, s)
	}
	if v >= unlimited {
		return -1, nil
	}
	return v, nil
}

// readCgroups reads /proc/self/cgroup: the memory cgroup's path per version (2: the unified
// hierarchy "0::/path"; 1: the hierarchy whose controllers include memory).
func readCgroups(path string) (map[int]string, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	out := map[int]string{}
	sc := bufio.NewScanner(file)
	for n := 1; sc.Scan(); n++ {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			return nil, fmt.Errorf("%s:%d: want \"id:controllers:path\", got %q", path, n, sc.Text())
		}
		switch {
		case parts[0] == "0" && parts[1] == "":
			out[2] = parts[2]
		case hasField(parts[1], "memory"):
			out[1] = parts[2]
		}
	}
	return out, sc.Err()
}

type mount struct {
	version     int
	root, point string
}

// readMounts reads the cgroup mounts of /proc/self/mountinfo: v2 (cgroup2) and the v1 memory
// hierarchy.
func readMounts(path string) ([]mount, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	var out []mount
	sc := bufio.NewScanner(file)
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		fs, ps := strings.Fields(pre), strings.Fields(post)
		if !ok || len(fs) < 5 || len(ps) < 3 {
			return nil, fmt.Errorf("%s:%d: not a mountinfo line: %q", path, n, sc.Text())
		}
		m := mount{root: fs[3], point: fs[4]}
		switch {
		case ps[0] == "cgroup2":
			m.version = 2
		case ps[0] == "cgroup" && hasField(ps[2], "memory"):
			m.version = 1
		default:
			continue
		}
		if m.root == "/" {
			m.root = ""
		}
		out = append(out, m)
	}
	return out, sc.Err()
}

// hasField reports whether the comma-separated list s holds f.
func hasField(s, f string) bool {
	for _, x := range strings.Split(s, ",") {
		if x == f {
			return true
		}
	}
	return false
}
