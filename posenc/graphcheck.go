package posenc

import "fmt"

// checkGraph reports what keeps a node encoding of width values per node from being computed
// for the graph with n nodes and directed edges src[m]→dst[m] into out: a negative node count,
// an output that is not n rows of width values, edge lists of different lengths, or an edge
// endpoint outside the nodes. The encoders wrap its error with their name.
func checkGraph(n int, src, dst []int32, width int, out []float32) error {
	if n < 0 {
		return fmt.Errorf("negative node count %d", n)
	}
	if len(out) != n*width {
		return fmt.Errorf("output has %d values, want %d nodes × %d", len(out), n, width)
	}
	if len(src) != len(dst) {
		return fmt.Errorf("%d edge sources but %d destinations", len(src), len(dst))
	}
	for m := range src {
		if s, d := src[m], dst[m]; s < 0 || int(s) >= n || d < 0 || int(d) >= n {
			return fmt.Errorf("edge %d (%d→%d) points outside the %d nodes", m, s, d, n)
		}
	}
	return nil
}
