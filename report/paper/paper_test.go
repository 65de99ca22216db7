package paper

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// go test ./paper -update rewrites tables.json from the LaTeX source.
var update = flag.Bool("update", false, "rewrite tables.json from the paper's LaTeX source")

// texPath is the paper in the shared folder beside the checkout.
var texPath = filepath.Join("..", "..", "..", "shared", "paper", "rewiring-with-positional-encodings.tex")

func readTeX(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(texPath)
	if err != nil {
		t.Skipf("paper source not available (%v): the transcription is checked only where ../shared/paper exists", err)
	}
	return string(b)
}

// The whole transcription equals what the LaTeX says, cell by cell.
func TestTranscriptionMatchesTeX(t *testing.T) {
	src := readTeX(t)
	want, err := transcribe(src)
	if err != nil {
		t.Fatal(err)
	}
	b, err := encode(want)
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile("tables.json", b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(b, embedded) {
		got, err := Load()
		if err != nil {
			t.Fatal(err)
		}
		for _, wt := range want.Tables {
			gt, ok := got.Table(wt.ID)
			if !ok {
				t.Errorf("%s missing from tables.json", wt.ID)
				continue
			}
			for _, wr := range wt.Rows {
				for _, gr := range gt.Rows {
					if gr.Label != wr.Label {
						continue
					}
					for c, wc := range wr.Cells {
						if gr.Cells[c] != wc {
							t.Errorf("%s %s %s: tables.json has %+v, the paper %+v", wt.ID, wr.Label, c, gr.Cells[c], wc)
						}
					}
				}
			}
		}
		t.Fatal("tables.json differs from the transcription of the paper (go test ./paper -update rewrites it)")
	}
}

// A few cells, each checked against the string as the LaTeX prints it.
func TestSpotCells(t *testing.T) {
	f, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		table string
		r     int
		col   string
		want  string // mean±std
		bold  bool
		tex   string // the cell as printed in the .tex
	}{
		{"table:zinc", 4, "gcn-adj-cls", "0.143±0.006", true, `\textbf{0.143$\pm$0.006}`},
		{"table:zinc", 1, "trans-adj", "0.341±0.024", false, `r=1 & .14 & 0.341$\pm$0.024`},
		{"table:zinc", 10, "gcn-lp-cls", "0.336±0.003", false, `0.370$\pm$0.013 & 0.336$\pm$0.003 \\`},
		{"table:aqsol", 1, "gcn-adj-cls", "0.920±0.009", true, `1.277$\pm$0.039 & \textbf{0.920$\pm$0.009}`},
		{"table:aqsol", 10, "mon-lp-cls", "1.192±0.015", false, `1.195$\pm$0.024 & 1.192$\pm$0.015 \\`},
		{"table:cluster", 3, "gcn-lp", "77.575±0.149", true, `\textbf{77.575$\pm$0.149} & \textbf{77.560$\pm$0.195}`},
		{"table:cluster", 2, "trans-lp", "47.140±11.138", false, `47.140$\pm$11.138`},
		{"table:pattern", 2, "gcn-short", "86.757±0.031", true, `{\textbf{86.757$\pm$0.031}}{86.736$\pm$0.014}`},
		{"table:mnist", 3, "gcn-short-cls", "98.390±0.104", false, `{98.315$\pm$0.156}{98.390$\pm$0.104}`},
		{"table:cifar10", 1, "gcn-lp-cls", "73.808±0.193", true, `{\textbf{72.525$\pm$0.471}}{\textbf{73.808$\pm$0.193}}`},
		{"table:zincT", 8, "trans-adj", "0.210±0.009", true, `r=8 & \textbf{0.210$\pm$0.009} & 0.278$\pm$0.026`},
		{"table:clusterT", 3, "trans-adj", "68.384±7.975", false, `77.216$\pm$0.226 & 68.384$\pm$7.975`},
	}
	src, _ := os.ReadFile(texPath) // nil when absent: the JSON side is still checked
	for _, c := range cases {
		tb, ok := f.Table(c.table)
		if !ok {
			t.Fatalf("%s not transcribed", c.table)
		}
		cell, ok := tb.Cell(c.r, c.col)
		if !ok {
			t.Errorf("%s r=%d %s: no cell", c.table, c.r, c.col)
			continue
		}
		if cell.String() != c.want || cell.Bold != c.bold {
			t.Errorf("%s r=%d %s: got %s bold=%v, want %s bold=%v", c.table, c.r, c.col, cell, cell.Bold, c.want, c.bold)
		}
		if src != nil && !bytes.Contains(src, []byte(c.tex)) {
			t.Errorf("%s r=%d %s: %q not found in the paper's LaTeX", c.table, c.r, c.col, c.tex)
		}
	}
	res, ok := f.Table("table:results")
	if !ok {
		t.Fatal("table:results not transcribed")
	}
	for _, row := range res.Rows {
		if row.Label == "GraphTransformer(500K)" {
			if got := row.Cells["mnist"].Text; got != "OOM" {
				t.Errorf("GraphTransformer(500K) mnist: %q, want OOM", got)
			}
			if got := row.Cells["aqsol"].String(); got != "1.110±0.010" {
				t.Errorf("GraphTransformer(500K) aqsol: %q", got)
			}
		}
	}
	zinc, _ := f.Table("table:zinc")
	if row, _ := zinc.RowR(3); row.Density != ".40" {
		t.Errorf("zinc r=3 density %q, want .40", row.Density)
	}
	cl, _ := f.Table("table:cluster")
	if row, _ := cl.RowR(2); row.Density != ">.99" {
		t.Errorf("cluster r=2 density %q, want >.99", row.Density)
	} else if v, approx, ok := row.DensityValue(); !ok || !approx || v != 0.99 {
		t.Errorf("cluster r=2 density value %v %v %v", v, approx, ok)
	}
	if cl.ColumnNotes["trans-lp"] == "" {
		t.Error("cluster: trans-lp has no not-converging note")
	}
}

func TestLoadFileErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"tables":[{"id":"table:x","row_key":"r","columns":["a"],"rows":[{"label":"r=1","r":1,"cells":{"b":{"mean":"1","std":"0"}}}]}]}`), 0o644)
	_, err := LoadFile(bad)
	if err == nil || !strings.Contains(err.Error(), "bad.json") || !strings.Contains(err.Error(), `unknown column "b"`) {
		t.Errorf("got %v", err)
	}
	os.WriteFile(bad, []byte(`{"tables":[],"extra":1}`), 0o644)
	if _, err := LoadFile(bad); err == nil || !strings.Contains(err.Error(), "extra") {
		t.Errorf("unknown key: got %v", err)
	}
}

// encode writes the file indented, one table row per line.
func encode(f *File) ([]byte, error) {
	var buf bytes.Buffer
	src, _ := json.Marshal(f.Source)
	fmt.Fprintf(&buf, "{\n  \"source\": %s,\n  \"tables\": [\n", src)
	for i, t := range f.Tables {
		rows := make([]any, len(t.Rows))
		for j := range t.Rows {
			rows[j] = t.Rows[j]
		}
		t.Rows = nil
		if err := encodeObject(&buf, t, "rows", rows, i == len(f.Tables)-1); err != nil {
			return nil, err
		}
	}
	if len(f.Figures) > 0 {
		buf.WriteString("  ],\n  \"figures\": [\n")
		for i, g := range f.Figures {
			series := make([]any, len(g.Series))
			for j := range g.Series {
				series[j] = g.Series[j]
			}
			g.Series = nil
			if err := encodeObject(&buf, g, "series", series, i == len(f.Figures)-1); err != nil {
				return nil, err
			}
		}
	}
	buf.WriteString("  ]\n}\n")
	return buf.Bytes(), nil
}

// encodeObject writes one table or figure (its list field key emptied) indented, then reopens it
// to write the list's items one per line.
func encodeObject(buf *bytes.Buffer, head any, key string, items []any, last bool) error {
	b, err := marshal(head, "    ", "  ")
	if err != nil {
		return err
	}
	h := strings.TrimSuffix(string(b), "}")
	h = strings.TrimSuffix(strings.TrimRight(h, " \n"), ",")
	h = strings.Replace(h, `"`+key+`": null`, `"`+key+`": [`, 1)
	buf.WriteString("    " + h + "\n")
	for j, it := range items {
		line, err := marshal(it, "", "")
		if err != nil {
			return err
		}
		sep := ","
		if j == len(items)-1 {
			sep = ""
		}
		fmt.Fprintf(buf, "        %s%s\n", line, sep)
	}
	sep := ","
	if last {
		sep = ""
	}
	fmt.Fprintf(buf, "      ]\n    }%s\n", sep)
	return nil
}

// marshal is json.MarshalIndent without HTML escaping (">.99" stays readable).
func marshal(v any, prefix, indent string) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent(prefix, indent)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// ---- the LaTeX reader used to make and check tables.json ----

// Dataset and metric of each transcribed table (the LaTeX does not say them in a parsable way).
var tableMeta = map[string][2]string{
	"table:zinc":     {"zinc", "mae"},
	"table:aqsol":    {"aqsol", "mae"},
	"table:cluster":  {"cluster", "weighted_accuracy"},
	"table:pattern":  {"pattern", "weighted_accuracy"},
	"table:mnist":    {"mnist", "accuracy"},
	"table:cifar10":  {"cifar10", "accuracy"},
	"table:zincT":    {"zinc", "mae"},
	"table:clusterT": {"cluster", "weighted_accuracy"},
	"table:results":  {"", ""},
}

var resultsMetric = map[string]string{
	"pattern": "weighted_accuracy", "cluster": "weighted_accuracy", "mnist": "accuracy",
	"cifar10": "accuracy", "zinc": "mae", "aqsol": "mae",
}

var (
	labelRe = regexp.MustCompile(`\\label\{(table:[^}]+)\}`)
	cellRe  = regexp.MustCompile(`^([0-9.]+)\s*\$\\pm\$\s*([0-9.]+)$`)
	rowRe   = regexp.MustCompile(`^r=(\d+)$`)
	noteRe  = regexp.MustCompile(`\*: ([^}]+)\}`)
	macroRe = regexp.MustCompile(`\\newcommand\{\\abcdresults\}\[8\]\{([^}]*)\}`)
)

func transcribe(src string) (*File, error) {
	f := &File{Source: "shared/paper/rewiring-with-positional-encodings.tex"}
	chunks := strings.Split(src, `\begin{table*}`)
	for _, ch := range chunks[1:] {
		end := strings.Index(ch, `\end{table*}`)
		if end < 0 {
			return nil, fmt.Errorf("table without \\end{table*}")
		}
		ch = ch[:end]
		m := labelRe.FindStringSubmatch(ch)
		if m == nil {
			continue
		}
		id := m[1]
		rows, err := texRows(ch)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", id, err)
		}
		if ds, ok := homophilyMeta[id]; ok {
			t, err := homophilyTable(id, ds, braced(ch, `\caption{`), rows)
			if err != nil {
				return nil, err
			}
			f.Tables = append(f.Tables, t)
			continue
		}
		meta, ok := tableMeta[id]
		if !ok {
			continue
		}
		t := Table{ID: id, Caption: braced(ch, `\caption{`), Dataset: meta[0], Metric: meta[1], RowKey: "r"}
		if id == "table:results" {
			t.RowKey = "method"
			t.ColumnMetrics = map[string]string{}
		}
		density := false
		for _, cells := range rows {
			head := cells[0].Text
			switch {
			case head == "type:" || head == "Datasets:":
				for _, c := range cells[1:] {
					name := c.Text
					if name == "density" {
						density = true
						continue
					}
					if strings.HasSuffix(name, "*") {
						name = strings.TrimSuffix(name, "*")
						n := noteRe.FindStringSubmatch(ch)
						if n == nil {
							return nil, fmt.Errorf("column %s* without a note", name)
						}
						if t.ColumnNotes == nil {
							t.ColumnNotes = map[string]string{}
						}
						t.ColumnNotes[name] = strings.TrimSpace(n[1])
					}
					if t.RowKey == "method" {
						name = strings.ToLower(name)
						t.ColumnMetrics[name] = resultsMetric[name]
					}
					t.Columns = append(t.Columns, name)
				}
			case t.RowKey == "method" && (head == "task:" || strings.Contains(head, `\#`)):
				// dataset facts, not results
			default:
				row := Row{Label: head, Cells: map[string]Cell{}}
				vals := cells[1:]
				if t.RowKey == "r" {
					m := rowRe.FindStringSubmatch(head)
					if m == nil {
						return nil, fmt.Errorf("row %q: not r=N", head)
					}
					row.R, _ = strconv.Atoi(m[1])
					if density {
						row.Density = vals[0].Text
						vals = vals[1:]
					}
				}
				if len(vals) != len(t.Columns) {
					return nil, fmt.Errorf("row %q: %d cells for %d columns", head, len(vals), len(t.Columns))
				}
				for i, v := range vals {
					row.Cells[t.Columns[i]] = v
				}
				t.Rows = append(t.Rows, row)
			}
		}
		f.Tables = append(f.Tables, t)
	}
	figs, err := transcribeFigures(src)
	if err != nil {
		return nil, err
	}
	f.Figures = figs
	if err := f.validate(); err != nil {
		return nil, err
	}
	return f, nil
}

// homophilyMeta: the homophily tables (table:cluster_homo, table:pattern_homo) and their dataset.
var homophilyMeta = map[string]string{"table:cluster_homo": "cluster", "table:pattern_homo": "pattern"}

// HomophilyBuckets are the column keys of the homophily tables: the test graphs in three equal
// parts by increasing edge homophily.
var homophilyColumns = []string{"low", "middle", "high"}

// homophilyTable reads a homophily table: its printed rows are "density & label & three cells",
// the first with the buckets' homophily scores (kept as column notes), then one row per r.
func homophilyTable(id, dataset, caption string, rows [][]Cell) (Table, error) {
	t := Table{ID: id, Caption: caption, Dataset: dataset, Metric: "weighted_accuracy", RowKey: "r",
		Columns: homophilyColumns, ColumnNotes: map[string]string{}}
	for _, cells := range rows {
		if len(cells) != 5 {
			return t, fmt.Errorf("%s: a row of %d cells, want 5", id, len(cells))
		}
		if cells[1].Text == "homophily score:" {
			for i, c := range homophilyColumns {
				t.ColumnNotes[c] = "homophily score " + cells[2+i].String()
			}
			continue
		}
		m := rowRe.FindStringSubmatch(cells[1].Text)
		if m == nil {
			return t, fmt.Errorf("%s: row %q: not r=N", id, cells[1].Text)
		}
		row := Row{Label: cells[1].Text, Density: cells[0].Text, Cells: map[string]Cell{}}
		row.R, _ = strconv.Atoi(m[1])
		for i, c := range homophilyColumns {
			row.Cells[c] = cells[2+i]
		}
		t.Rows = append(t.Rows, row)
	}
	if len(t.ColumnNotes) != len(homophilyColumns) || len(t.Rows) == 0 {
		return t, fmt.Errorf("%s: no homophily scores or no rows", id)
	}
	return t, nil
}

// figureMeta says what the LaTeX of each plotted figure does not: dataset, axes, the open points,
// and the setting of each legend entry.
var figureMeta = map[string]struct {
	dataset, x, y, note string
	legend              map[string]Series
}{
	"fig:random_erdos": {"erdosrenyi", "epoch", "train accuracy", "GatedGCN; the paper gives no model or seeds for the curves",
		map[string]Series{"Laplacian": {Setting: "gcn-lp", R: 5}, "Shortest": {Setting: "gcn-short", R: 5},
			"Adj-5": {Setting: "gcn-adj", R: 5}, "Adj-10": {Setting: "gcn-adj", R: 10}}},
	"fig:neighborplot": {"neighborsmatch", "r_p", "train accuracy", "GatedGCN; the encoding is not given (ours: adj)",
		map[string]Series{"$r=1$": {Setting: "gcn-adj", R: 1}, "$r=2$": {Setting: "gcn-adj", R: 2}, "$r=3$": {Setting: "gcn-adj", R: 3},
			"$r=4$": {Setting: "gcn-adj", R: 4}, "$r=1$,CLS": {Setting: "gcn-adj-cls", R: 1}}},
}

var (
	figLabelRe = regexp.MustCompile(`\\label\{(fig:[^}]+)\}`)
	plotRe     = regexp.MustCompile(`(?s)coordinates \{(.*?)\};\s*\\addlegendentry\{(.*?)\}`)
	pointRe    = regexp.MustCompile(`\(([-0-9.]+),([-0-9.]+)\)`)
)

// transcribeFigures reads the pgfplots coordinates and legend entries of the figures in
// figureMeta, in the order the paper has them.
func transcribeFigures(src string) ([]Figure, error) {
	var out []Figure
	for _, ch := range strings.Split(src, `\begin{figure}`)[1:] {
		ch = ch[:max(strings.Index(ch, `\end{figure}`), 0)]
		m := figLabelRe.FindStringSubmatch(ch)
		if m == nil {
			continue
		}
		meta, ok := figureMeta[m[1]]
		if !ok {
			continue
		}
		fig := Figure{ID: m[1], Caption: braced(ch, `\caption{`), Dataset: meta.dataset, X: meta.x, Y: meta.y, Note: meta.note}
		for _, p := range plotRe.FindAllStringSubmatch(ch, -1) {
			s, ok := meta.legend[p[2]]
			if !ok {
				return nil, fmt.Errorf("%s: legend entry %q has no setting", fig.ID, p[2])
			}
			s.Label = strings.ReplaceAll(p[2], "$", "")
			for _, pt := range pointRe.FindAllStringSubmatch(p[1], -1) {
				x, err1 := strconv.ParseFloat(pt[1], 64)
				y, err2 := strconv.ParseFloat(pt[2], 64)
				if err1 != nil || err2 != nil {
					return nil, fmt.Errorf("%s %s: point %s", fig.ID, s.Label, pt[0])
				}
				s.Points = append(s.Points, [2]float64{x, y})
			}
			fig.Series = append(fig.Series, s)
		}
		if len(fig.Series) != len(meta.legend) {
			return nil, fmt.Errorf("%s: %d curves, want %d", fig.ID, len(fig.Series), len(meta.legend))
		}
		out = append(out, fig)
	}
	return out, nil
}

// texRows returns the cells of each tabular row of a table chunk.
func texRows(ch string) ([][]Cell, error) {
	b := strings.Index(ch, `\begin{tabular}`)
	e := strings.Index(ch, `\end{tabular}`)
	if b < 0 || e < 0 {
		return nil, fmt.Errorf("no tabular")
	}
	body := ch[b:e]
	body = body[strings.Index(body, "}")+1:]
	body = body[strings.Index(body, "}")+1:] // column spec
	var lines [][]string
	if m := macroRe.FindStringSubmatch(ch); m != nil {
		// \abcdresults{#1}…{#8} expands to its template; the template here is "#1 & … & #8 \\".
		order := regexp.MustCompile(`#(\d)`).FindAllStringSubmatch(m[1], -1)
		for {
			i := strings.Index(body, `\abcdresults`)
			if i < 0 {
				break
			}
			body = body[i+len(`\abcdresults`):]
			var args []string
			for k := 0; k < 8; k++ {
				a, rest, err := group(body)
				if err != nil {
					return nil, err
				}
				args = append(args, a)
				body = rest
			}
			var line []string
			for _, o := range order {
				n, _ := strconv.Atoi(o[1])
				line = append(line, args[n-1])
			}
			lines = append(lines, line)
		}
	} else {
		for _, seg := range strings.Split(body, `\\`) {
			seg = strings.TrimSpace(strings.ReplaceAll(seg, `\hline`, ""))
			if seg == "" {
				continue
			}
			lines = append(lines, strings.Split(seg, "&"))
		}
	}
	var rows [][]Cell
	for _, l := range lines {
		var cells []Cell
		for _, s := range l {
			cells = append(cells, texCell(s))
		}
		for len(cells) > 0 && cells[len(cells)-1].Text == "" && cells[len(cells)-1].Mean == "" {
			cells = cells[:len(cells)-1]
		}
		rows = append(rows, cells)
	}
	return rows, nil
}

// group reads one {…} argument (balanced) after optional spaces.
func group(s string) (arg, rest string, err error) {
	s = strings.TrimLeft(s, " \t\n")
	if !strings.HasPrefix(s, "{") {
		return "", "", fmt.Errorf("macro argument expected at %.30q", s)
	}
	depth := 0
	for i, c := range s {
		switch c {
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				return s[1:i], s[i+1:], nil
			}
		}
	}
	return "", "", fmt.Errorf("unbalanced braces at %.30q", s)
}

// braced returns the balanced-brace argument following prefix.
func braced(s, prefix string) string {
	i := strings.Index(s, prefix)
	if i < 0 {
		return ""
	}
	a, _, err := group(s[i+len(prefix)-1:])
	if err != nil {
		return ""
	}
	return strings.Join(strings.Fields(a), " ")
}

func texCell(s string) Cell {
	s = strings.TrimSpace(s)
	var c Cell
	if strings.HasPrefix(s, `\textbf{`) && strings.HasSuffix(s, "}") {
		c.Bold = true
		s = strings.TrimSpace(s[len(`\textbf{`) : len(s)-1])
	}
	if m := cellRe.FindStringSubmatch(s); m != nil {
		c.Mean, c.Std = m[1], m[2]
		return c
	}
	c.Text = strings.ReplaceAll(s, `$>$`, ">")
	return c
}
