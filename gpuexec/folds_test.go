package gpuexec

import (
	"strings"
	"testing"
)

// TestEdgeFolds: REWIREGNN_EDGE_FOLDS unset or empty turns every edge fold on, 0 turns them all
// off, and a list of fold names turns those off; a name it does not know is refused, naming
// the variable, the name and the names it knows.
func TestEdgeFolds(t *testing.T) {
	for _, c := range []struct {
		env string
		all bool
		off string
	}{{"", true, ""}, {" ", true, ""}, {"0", false, "scatter,bndx,gate"}, {"gate", false, "gate"},
		{"scatter, bndx", false, "scatter,bndx"}, {"bndx,gate,scatter", false, "scatter,bndx,gate"}} {
		t.Setenv(EnvEdgeFolds, c.env)
		s, err := EdgeFolds()
		if err != nil {
			t.Fatalf("%s=%q: %v", EnvEdgeFolds, c.env, err)
		}
		if s.All() != c.all || s.Off() != c.off {
			t.Errorf("%s=%q: all %v, off %q; want %v, %q", EnvEdgeFolds, c.env, s.All(), s.Off(), c.all, c.off)
		}
	}
	for _, bad := range []string{"gates", "gate,", "1"} {
		t.Setenv(EnvEdgeFolds, bad)
		_, err := EdgeFolds()
		if err == nil || !strings.Contains(err.Error(), EnvEdgeFolds) || !strings.Contains(err.Error(), "scatter, bndx, gate") {
			t.Errorf("%s=%q: %v, want an error naming the variable and the folds", EnvEdgeFolds, bad, err)
		}
	}
}
