// Package paper holds the result tables of "Rewiring with Positional Encodings for Graph Neural
// Networks" (TMLR 2023), transcribed once from the paper's LaTeX source into tables.json, so that
// reports can print the published numbers beside ours.
//
// Numbers are kept as printed (strings: "0.341", ".14", ">.99"), so nothing is lost to rounding;
// Cell.Values parses them. A test checks every cell against the LaTeX source when it is present
// (../shared/paper beside the checkout).
package paper

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
)

//go:embed tables.json
var embedded []byte

// File is tables.json.
type File struct {
	Source  string   `json:"source"` // the LaTeX file the numbers come from
	Tables  []Table  `json:"tables"`
	Figures []Figure `json:"figures,omitempty"`
}

// Figure is one of the paper's line plots whose points the LaTeX gives (pgfplots coordinates):
// fig:random_erdos (train accuracy per epoch) and fig:neighborplot (accuracy per problem radius).
type Figure struct {
	ID      string   `json:"id"`      // the LaTeX label
	Caption string   `json:"caption"` // as printed
	Dataset string   `json:"dataset"` // data registry name, or its family (neighborsmatch)
	X       string   `json:"x"`       // epoch or r_p
	Y       string   `json:"y"`       // what the points measure, as a fraction
	Note    string   `json:"note"`    // what the paper leaves open about the curves
	Series  []Series `json:"series"`
}

// Series is one curve of a figure: the paper's legend entry, the setting it shows (a table
// column key such as gcn-adj, and r) and its points (x, y).
type Series struct {
	Label   string       `json:"label"`
	Setting string       `json:"setting"`
	R       int          `json:"r"`
	Points  [][2]float64 `json:"points"`
}

// Table is one result table of the paper.
type Table struct {
	ID      string `json:"id"`      // the LaTeX label, e.g. table:zinc
	Caption string `json:"caption"` // as printed, LaTeX markup kept
	Dataset string `json:"dataset"` // data registry name (zinc, aqsol, cluster, …); "" for table:results
	// Metric of every cell: mae, accuracy or weighted_accuracy (runfiles.Metric*); "" when it
	// differs per column (table:results, see ColumnMetrics).
	Metric        string            `json:"metric,omitempty"`
	ColumnMetrics map[string]string `json:"column_metrics,omitempty"`
	RowKey        string            `json:"row_key"` // "r" (rows are r = 1, 2, …) or "method"
	Columns       []string          `json:"columns"` // setting keys (gcn-adj-cls, …) or dataset names, in the paper's order
	// ColumnNotes explains a marker the paper prints on a column header ("*" on trans-lp in
	// table:cluster: "Training not converging").
	ColumnNotes map[string]string `json:"column_notes,omitempty"`
	Rows        []Row             `json:"rows"`
}

// Row is one row of a table: one r (with its density) or one method.
type Row struct {
	Label   string          `json:"label"`             // as printed: "r=1", "MoNet(100K)"
	R       int             `json:"r,omitempty"`       // for RowKey "r"
	Density string          `json:"density,omitempty"` // as printed: ".14", ">.99", "1.0"
	Cells   map[string]Cell `json:"cells"`             // by column key
}

// Cell is one printed cell: mean ± std, or a text such as "OOM".
type Cell struct {
	Mean string `json:"mean,omitempty"` // as printed
	Std  string `json:"std,omitempty"`  // as printed
	Text string `json:"text,omitempty"` // a cell without numbers (OOM)
	Bold bool   `json:"bold,omitempty"` // printed in bold (the paper's best-r marking)
}

// Values returns the cell's mean and std as numbers; ok is false for a text cell.
func (c Cell) Values() (mean, std float64, ok bool) {
	if c.Mean == "" {
		return 0, 0, false
	}
	m, err1 := strconv.ParseFloat(c.Mean, 64)
	s, err2 := strconv.ParseFloat(c.Std, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return m, s, true
}

// Versus compares our mean with the cell: "within 2σ" when the difference is at most twice the
// cell's standard deviation (over the paper's seeds), else "outside 2σ", with the difference
// (ours − the paper's) and the bound, "within 2σ (Δ +0.008, 2σ 0.018)"; ok is false for a
// cell without numbers. The one wording of every comparison with the paper (the tables' "vs
// paper" column, the docs' vs facts).
func (c Cell) Versus(mean float64) (string, bool) {
	m, s, ok := c.Values()
	if !ok {
		return "", false
	}
	d := mean - m
	if math.Abs(d) < 0.0005 {
		d = 0 // printed +0.000, not -0.000
	}
	word := "outside 2σ"
	if math.Abs(d) <= 2*s+1e-12 {
		word = "within 2σ"
	}
	return fmt.Sprintf("%s (Δ %+.3f, 2σ %.3f)", word, d, 2*s), true
}

// String is the cell as the paper prints it, with "±".
func (c Cell) String() string {
	if c.Mean == "" {
		return c.Text
	}
	return c.Mean + "±" + c.Std
}

// DensityValue parses the printed density; ">.99" reads as 0.99 with approx true.
func (r Row) DensityValue() (v float64, approx bool, ok bool) {
	s := r.Density
	if s == "" {
		return 0, false, false
	}
	if strings.HasPrefix(s, ">") {
		approx = true
		s = s[1:]
	}
	v, err := strconv.ParseFloat(s, 64)
	return v, approx, err == nil
}

// Load returns the tables compiled into the binary.
func Load() (*File, error) {
	f, err := parse(embedded)
	if err != nil {
		return nil, fmt.Errorf("paper: embedded tables.json: %w", err)
	}
	return f, nil
}

// LoadFile reads a tables.json file (a corrected or extended copy of the embedded one).
func LoadFile(path string) (*File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("paper: %w", err)
	}
	f, err := parse(b)
	if err != nil {
		return nil, fmt.Errorf("paper: %s: %w", path, err)
	}
	return f, nil
}

func parse(b []byte) (*File, error) {
	var f File
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, err
	}
	if err := f.validate(); err != nil {
		return nil, err
	}
	return &f, nil
}

func (f *File) validate() error {
	seen := map[string]bool{}
	for i, g := range f.Figures {
		if g.ID == "" || seen[g.ID] {
			return fmt.Errorf("figures[%d]: missing or duplicate id %q", i, g.ID)
		}
		seen[g.ID] = true
		for _, s := range g.Series {
			if s.Setting == "" || s.R < 1 || len(s.Points) == 0 {
				return fmt.Errorf("%s: series %q: needs a setting, r ≥ 1 and points", g.ID, s.Label)
			}
		}
	}
	for i, t := range f.Tables {
		if t.ID == "" {
			return fmt.Errorf("tables[%d]: no id", i)
		}
		if seen[t.ID] {
			return fmt.Errorf("tables[%d]: duplicate id %q", i, t.ID)
		}
		seen[t.ID] = true
		if t.RowKey != "r" && t.RowKey != "method" {
			return fmt.Errorf("%s: row_key %q is neither r nor method", t.ID, t.RowKey)
		}
		cols := map[string]bool{}
		for _, c := range t.Columns {
			cols[c] = true
		}
		for j, r := range t.Rows {
			if t.RowKey == "r" && r.R < 1 {
				return fmt.Errorf("%s: rows[%d] (%q): r must be ≥ 1", t.ID, j, r.Label)
			}
			for c, cell := range r.Cells {
				if !cols[c] {
					return fmt.Errorf("%s: row %q: cell for unknown column %q", t.ID, r.Label, c)
				}
				if cell.Mean == "" && cell.Text == "" {
					return fmt.Errorf("%s: row %q, column %q: empty cell", t.ID, r.Label, c)
				}
				if cell.Mean != "" {
					if _, _, ok := cell.Values(); !ok {
						return fmt.Errorf("%s: row %q, column %q: mean %q / std %q are not numbers", t.ID, r.Label, c, cell.Mean, cell.Std)
					}
				}
			}
		}
	}
	return nil
}

// Figure returns the figure with the given id (e.g. "fig:random_erdos").
func (f *File) Figure(id string) (*Figure, bool) {
	for i := range f.Figures {
		if f.Figures[i].ID == id {
			return &f.Figures[i], true
		}
	}
	return nil, false
}

// Table returns the table with the given id (e.g. "table:zinc").
func (f *File) Table(id string) (*Table, bool) {
	for i := range f.Tables {
		if f.Tables[i].ID == id {
			return &f.Tables[i], true
		}
	}
	return nil, false
}

// TableForDataset returns the main r-sweep table of a dataset (table:<dataset>).
func (f *File) TableForDataset(dataset string) (*Table, bool) {
	for i := range f.Tables {
		if f.Tables[i].Dataset == dataset && f.Tables[i].ID == "table:"+dataset {
			return &f.Tables[i], true
		}
	}
	return nil, false
}

// RowR returns the row for radius r.
func (t *Table) RowR(r int) (*Row, bool) {
	for i := range t.Rows {
		if t.RowKey == "r" && t.Rows[i].R == r {
			return &t.Rows[i], true
		}
	}
	return nil, false
}

// Cell returns the cell of row r and column col.
func (t *Table) Cell(r int, col string) (Cell, bool) {
	row, ok := t.RowR(r)
	if !ok {
		return Cell{}, false
	}
	c, ok := row.Cells[col]
	return c, ok
}
