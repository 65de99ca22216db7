package paper

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
)

// external.json holds published numbers of other papers (LRGB's baselines on Peptides-func, …),
// kept apart from tables.json, which is the reproduced paper's own tables only.
//
//go:embed external.json
var externalJSON []byte

// External is external.json: results published by OTHER papers than the one this repository
// reproduces, for the datasets beyond it, each row with its source and what it was checked
// against. Reports print them as reference rows, never as the paper's numbers.
type External struct {
	Note    string           `json:"note"`
	Sources []ExternalSource `json:"sources"`
	Rows    []ExternalRow    `json:"rows"`
}

// ExternalSource is one publication the rows cite.
type ExternalSource struct {
	ID       string `json:"id"`       // what rows name in their source field
	Citation string `json:"citation"` // authors, title, venue, arXiv id
	Where    string `json:"where"`    // the part of the publication the numbers come from
	// Selection is how the publication chose and aggregated its numbers (the epoch reported,
	// the seeds, the statistic), for comparing them with ours.
	Selection string `json:"selection"`
	Checked   string `json:"checked"` // what the numbers were checked against here
}

// ExternalRow is one published result.
type ExternalRow struct {
	Table  string `json:"table"`  // the table of ours it is printed in, e.g. table:peptides-func
	Method string `json:"method"` // as the source names it
	// Setting is the column key of our runs that train the same model (gcn-none for LRGB's
	// GatedGCN); empty when we have none.
	Setting string `json:"setting,omitempty"`
	Mean    string `json:"mean"` // as printed
	Std     string `json:"std"`
	Params  int    `json:"params,omitempty"` // the source's parameter count, when it gives one
	Source  string `json:"source"`           // an ExternalSource.ID
	Checked string `json:"checked"`          // the row's own evidence (file, key, unrounded value)
}

// Cell returns the row's value as a Cell.
func (r ExternalRow) Cell() Cell { return Cell{Mean: r.Mean, Std: r.Std} }

// LoadExternal returns the external results compiled into the binary.
func LoadExternal() (*External, error) {
	e, err := parseExternal(externalJSON)
	if err != nil {
		return nil, fmt.Errorf("paper: embedded external.json: %w", err)
	}
	return e, nil
}

// LoadExternalFile reads an external.json file (a corrected or extended copy of the embedded one).
func LoadExternalFile(path string) (*External, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("paper: %w", err)
	}
	e, err := parseExternal(b)
	if err != nil {
		return nil, fmt.Errorf("paper: %s: %w", path, err)
	}
	return e, nil
}

func parseExternal(b []byte) (*External, error) {
	var e External
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		return nil, err
	}
	return &e, e.validate()
}

// validate insists on the provenance: every source says where its numbers come from, how they
// were selected and what they were checked against; every row names a known source and its own
// evidence, and its numbers parse.
func (e *External) validate() error {
	var errs []error
	ids := map[string]bool{}
	for i, s := range e.Sources {
		switch {
		case s.ID == "" || ids[s.ID]:
			errs = append(errs, fmt.Errorf("sources[%d]: missing or duplicate id %q", i, s.ID))
		case s.Citation == "" || s.Where == "" || s.Selection == "" || s.Checked == "":
			errs = append(errs, fmt.Errorf("source %s: citation, where, selection and checked are all required", s.ID))
		}
		ids[s.ID] = true
	}
	seen := map[string]bool{}
	for i, r := range e.Rows {
		what := fmt.Sprintf("rows[%d] (%s)", i, r.Method)
		if _, _, ok := r.Cell().Values(); !ok {
			errs = append(errs, fmt.Errorf("%s: mean %q / std %q are not numbers", what, r.Mean, r.Std))
		}
		switch {
		case !strings.HasPrefix(r.Table, "table:") || r.Method == "":
			errs = append(errs, fmt.Errorf("%s: needs a table id (table:…) and a method", what))
		case !ids[r.Source]:
			errs = append(errs, fmt.Errorf("%s: unknown source %q", what, r.Source))
		case r.Checked == "":
			errs = append(errs, fmt.Errorf("%s: no checked: say what the number was checked against", what))
		case seen[r.Table+"\x00"+r.Method+"\x00"+r.Source]:
			errs = append(errs, fmt.Errorf("%s: listed twice for %s from %s", what, r.Table, r.Source))
		}
		seen[r.Table+"\x00"+r.Method+"\x00"+r.Source] = true
	}
	return errors.Join(errs...)
}

// For returns the rows printed in a table, in file order.
func (e *External) For(table string) []ExternalRow {
	var out []ExternalRow
	for _, r := range e.Rows {
		if r.Table == table {
			out = append(out, r)
		}
	}
	return out
}

// Source returns the source called id.
func (e *External) Source(id string) (ExternalSource, bool) {
	for _, s := range e.Sources {
		if s.ID == id {
			return s, true
		}
	}
	return ExternalSource{}, false
}
