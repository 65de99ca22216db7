package memlimit

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// units are the suffixes ParseSize accepts, longest first (binary and decimal; "G" is GiB, as
// in ulimit, docker and Go's GOMEMLIMIT).
var units = []struct {
	suffix string
	mult   float64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
	{"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"T", 1 << 40},
	{"B", 1},
}

// ParseSize parses a byte size: a number (fractions allowed) and an optional unit, e.g.
// "16GiB", "1.5G", "800MB", "1073741824".
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult := 1.0
	for _, u := range units {
		if rest, ok := strings.CutSuffix(t, u.suffix); ok {
			t, mult = strings.TrimSpace(rest), u.mult
			break
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || v <= 0 || math.IsInf(v, 0) || v*mult >= math.MaxInt64 {
		return 0, fmt.Errorf("size %q: want a positive number of bytes with an optional unit (KiB, MiB, GiB, TiB, KB, MB, GB, TB; G = GiB), e.g. 16GiB", s)
	}
	return int64(v * mult), nil
}

// Format writes a byte count with a binary unit, e.g. "12.3 GiB".
func Format(n int64) string {
	v := float64(n)
	for _, u := range []string{"B", "KiB", "MiB", "GiB"} {
		if math.Abs(v) < 1024 {
			if u == "B" {
				return fmt.Sprintf("%d B", n)
			}
			return fmt.Sprintf("%.1f %s", v, u)
		}
		v /= 1024
	}
	return fmt.Sprintf("%.1f TiB", v)
}
