package report

import (
	"fmt"
	"sort"
	"strings"

	"github.com/rewiregnn/rewiregnn/data"
	"github.com/rewiregnn/rewiregnn/report/results"
)

// Column labels. A table that reproduces one of the paper's (a paper table beside it: table:zinc,
// table:results, …) labels its columns as the paper does, model-encoding[-cls] with the paper's
// model label (results.Setting: gcn for GatedGCN); everything else — our own tables
// (table:peptides-func, the model-agnostic table), the statistics and provenance sections under
// every table, the figures and their file names — uses the model registry's names
// (results.RegistrySetting: gatedgcn-adj-cls). A legend under each table names every label it
// uses (docs/protocol.md §"Reporting" lists them all).

// modelNames are the models' names in prose, by registry name (models/models.go).
var modelNames = map[string]string{
	"gatedgcn": "GatedGCN", "gcn": "GCN (Kipf and Welling)", "monet": "MoNet", "transformer": "Graph Transformer",
	"gin": "GIN", "sage": "GraphSAGE", "gat": "GAT", "pna": "PNA",
}

// modelName is a registry model's name in prose, the registry name itself when unknown.
func modelName(registry string) string {
	if n, ok := modelNames[registry]; ok {
		return n
	}
	return registry
}

// labelParts splits the column keys (results.Setting) into their paper model labels and their
// encodings, each sorted and once, and says whether some column has the CLS node.
func labelParts(columns []string) (models, encodings []string, cls bool) {
	seenM, seenE := map[string]bool{}, map[string]bool{}
	for _, c := range columns {
		m, rest, _ := strings.Cut(c, "-")
		enc, withCLS := strings.CutSuffix(rest, "-cls")
		cls = cls || withCLS
		if !seenM[m] {
			seenM[m] = true
			models = append(models, m)
		}
		if enc != "" && !seenE[enc] {
			seenE[enc] = true
			encodings = append(encodings, enc)
		}
	}
	sort.Strings(models)
	sort.Strings(encodings)
	return models, encodings, cls
}

// settingLegend is the rest of a legend: the encodings and the CLS suffix.
func settingLegend(encodings []string, cls bool) string {
	var parts []string
	for _, e := range encodings {
		name := "encoding " + e
		if enc, ok := data.LookupEncoding(e); ok {
			name = enc.Title // in prose (docs/protocol.md §"Rewiring" to §"Random-walk encoding")
		}
		parts = append(parts, e+" = "+name)
	}
	s := "; then the encoding: " + strings.Join(parts, ", ")
	if cls {
		s += "; -cls: with the CLS node (a virtual node joined to every node, read out)"
	}
	return s + "."
}

// PaperLegend is the legend of a table that reproduces one of the paper's: its columns carry the
// paper's labels, each model's named with its registry name, and the statistics below use the
// registry's names.
func PaperLegend(columns []string) string {
	models, encodings, cls := labelParts(columns)
	var parts []string
	for _, m := range models {
		reg := results.RegistryModel(m)
		switch {
		case m == "kgcn":
			parts = append(parts, fmt.Sprintf("kgcn = %s (this framework's label: the paper did not train it; %s in the model registry)", modelName(reg), reg))
		case reg != m:
			parts = append(parts, fmt.Sprintf("%s = %s (the paper's label; %s in the model registry)", m, modelName(reg), reg))
		default:
			parts = append(parts, fmt.Sprintf("%s = %s (the model registry's name)", m, modelName(reg)))
		}
	}
	return "Labels: the paper's column labels, model-encoding[-cls]: " + strings.Join(parts, ", ") + settingLegend(encodings, cls) +
		" The run statistics, figures and file names use the model registry's names (" + exampleRegistry(columns) + ")."
}

// RegistryLegend is the legend of a table labelled with the model registry's names.
func RegistryLegend(columns []string) string {
	models, encodings, cls := labelParts(columns)
	var parts []string
	for _, m := range models {
		parts = append(parts, fmt.Sprintf("%s = %s", m, modelName(m)))
	}
	return "Labels: the model registry's names (models/models.go), model-encoding[-cls]: " + strings.Join(parts, ", ") + settingLegend(encodings, cls)
}

// exampleRegistry is one column's paper label against its registry label, e.g.
// "gcn-adj is gatedgcn-adj"; "" for no column.
func exampleRegistry(columns []string) string {
	for _, c := range columns {
		if r := results.RegistrySetting(c); r != c {
			return c + " is " + r
		}
	}
	if len(columns) > 0 {
		return "the same labels here"
	}
	return ""
}

// registryColumns are column keys as the registry's names.
func registryColumns(columns []string) []string {
	out := make([]string, len(columns))
	for i, c := range columns {
		out[i] = results.RegistrySetting(c)
	}
	return out
}
