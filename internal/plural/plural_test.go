package plural

import "testing"

func TestCount(t *testing.T) {
	for _, c := range []struct {
		n          int
		noun, want string
	}{
		{1, "epoch", "1 epoch"}, {0, "epoch", "0 epochs"}, {2, "thread", "2 threads"},
		{1, "batch", "1 batch"}, {3, "batch", "3 batches"}, {-1, "seed", "-1 seeds"},
	} {
		if got := Count(c.n, c.noun); got != c.want {
			t.Errorf("Count(%d, %q) = %q, want %q", c.n, c.noun, got, c.want)
		}
	}
	if got := Noun(1, "graph"); got != "graph" {
		t.Errorf("Noun(1, graph) = %q", got)
	}
}
