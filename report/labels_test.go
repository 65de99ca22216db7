package report

import (
	"regexp"
	"strings"
	"testing"

	"github.com/rewiregnn/rewiregnn/report/results"
	"github.com/rewiregnn/rewiregnn/runfiles"
)

// paperLabel matches a column label with one of the paper's model labels (gcn-adj, kgcn-lp,
// mon-adj-cls, trans-short), not a registry name that ends like one (gatedgcn-adj).
var paperLabel = regexp.MustCompile(`(^|[^a-z])(k?gcn|mon|trans)-(none|adj|short|lp|rwse)`)

// TestPaperTableHasLegend: a table that reproduces one of the paper's keeps the paper's labels
// in its header and says under it what each means (gcn is GatedGCN, gatedgcn in the registry;
// kgcn is Kipf and Welling's GCN, gcn in the registry), in Markdown and LaTeX; its statistics
// name the settings by the registry's names.
func TestPaperTableHasLegend(t *testing.T) {
	runs := zincRuns()
	for _, seed := range []int64{41, 95} { // Kipf and Welling's GCN, beside the paper's columns
		runs = append(runs, &results.Run{Dir: "runs/zinc-gcn-adj-r1/seed", Result: &runfiles.Result{Name: "zinc-gcn-adj-r1", Dataset: "zinc",
			Model: "gcn", Encoding: "adj", R: 1, Seed: seed, Metric: runfiles.MetricMAE, TestMetric: 0.4, Epochs: 10, StoppedBy: runfiles.StopMinLR,
			ConfigHash: protocolHash}})
	}
	groups, err := results.Aggregate(runs, results.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tb, err := Build("table:zinc", groups, smallZinc(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	md, tex := tb.Markdown(), tb.LaTeX()
	header := md[strings.Index(md, "| r |"):]
	header = header[:strings.Index(header, "\n")]
	for _, want := range []string{"| trans-adj |", "| gcn-adj |", "| gcn-adj-cls |", "| kgcn-adj |"} {
		if !strings.Contains(header, want) {
			t.Errorf("header %q lacks %q", header, want)
		}
	}
	for _, want := range []string{
		"gcn = GatedGCN (the paper's label; gatedgcn in the model registry)",
		"kgcn = GCN (Kipf and Welling) (this framework's label: the paper did not train it; gcn in the model registry)",
		"trans = Graph Transformer (the paper's label; transformer in the model registry)",
		"adj = the adjacency-power encoding", "-cls: with the CLS node",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown legend lacks %q:\n%s", want, md)
		}
		if !strings.Contains(tex, texText(want)) {
			t.Errorf("LaTeX legend lacks %q:\n%s", texText(want), tex)
		}
	}
	stats := md[strings.Index(md, "| setting | r |"):]
	// gcn-adj is Kipf and Welling's GCN here (the registry's gcn), GatedGCN's rows gatedgcn-…
	if m := regexp.MustCompile(`(^|[^a-z])(kgcn|mon|trans)-|\| gcn-adj-cls |\| gcn-adj \| [^1]`).FindString(stats); m != "" {
		t.Errorf("statistics name a paper label %q:\n%s", m, stats)
	}
	for _, want := range []string{"| gatedgcn-adj-cls | 1 |", "| transformer-adj | 2 |", "| gcn-adj | 1 | 2/4 |"} {
		if !strings.Contains(stats, want) {
			t.Errorf("statistics lack %q:\n%s", want, stats)
		}
	}
}

// TestNonPaperTableUsesRegistryLabels: tables beyond the paper (table:peptides-func, a table
// without a paper table) have no paper model labels anywhere, only the registry's names, with a
// legend that names them.
func TestNonPaperTableUsesRegistryLabels(t *testing.T) {
	lt := peptidesTable(t)
	groups, err := results.Aggregate(zincRuns(), results.Options{})
	if err != nil {
		t.Fatal(err)
	}
	own, err := Build("table:zinc", groups, nil, nil) // no paper table beside it
	if err != nil {
		t.Fatal(err)
	}
	for name, doc := range map[string]string{"peptides-func md": lt.Markdown(), "peptides-func tex": lt.LaTeX(),
		"own md": own.Markdown(), "own tex": own.LaTeX()} {
		if m := paperLabel.FindString(doc); m != "" {
			t.Errorf("%s: paper label %q in\n%s", name, m, doc)
		}
		if !strings.Contains(doc, "gatedgcn-adj") {
			t.Errorf("%s: no gatedgcn-adj label in\n%s", name, doc)
		}
		want := "Labels: the model registry's names (models/models.go), model-encoding[-cls]: gatedgcn = GatedGCN"
		if strings.HasSuffix(name, "tex") {
			want = texText(want)
		}
		if !strings.Contains(doc, want) {
			t.Errorf("%s: legend %q missing in\n%s", name, want, doc)
		}
	}
}

// TestRegistrySetting: the paper's labels map to the registry's names and back.
func TestRegistrySetting(t *testing.T) {
	for _, c := range []struct{ model, enc string }{{"gatedgcn", "adj"}, {"gcn", "lp"}, {"monet", "short"}, {"transformer", "rwse"}, {"gin", "none"}} {
		for _, cls := range []bool{false, true} {
			want := c.model + "-" + c.enc
			if cls {
				want += "-cls"
			}
			if got := results.RegistrySetting(results.Setting(c.model, c.enc, cls)); got != want {
				t.Errorf("%s %s %t: %s, want %s", c.model, c.enc, cls, got, want)
			}
		}
	}
}
