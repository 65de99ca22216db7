package data

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
)

// The Peptides-func graphs as JSON Lines (the shared data folder's peptides-func/{train,val,
// test}.jsonl.gz, built from LRGB's raw CSV and split with OGB's smiles2graph rules): one graph
// per line, a JSON object with exactly the keys
//
//	x          N rows of the 9 OGB atom columns (ids)
//	edge_attr  E rows of the 3 OGB bond columns (ids)
//	src, dst   E edge endpoints each, 0-based (each bond both ways)
//	y          the width labels 0 or 1 (null: a missing label, read as NaN)
//	smiles     the molecule's SMILES (not kept)
//
// The graphs are those ReadPeptidesPT builds from the same molecule: the same checks (OGB
// vocabulary per column, edges within the atoms, y's width and values) and the same layout.

// peptideLine is one line of a Peptides JSON Lines file, each value as it stands: the id lists
// are parsed by parseIDs and parseIDRows, faster than encoding/json's reflection and with errors
// that name the row and column. A key absent stays nil, a null one is "null".
type peptideLine struct {
	X        json.RawMessage `json:"x"`
	EdgeAttr json.RawMessage `json:"edge_attr"`
	Src      json.RawMessage `json:"src"`
	Dst      json.RawMessage `json:"dst"`
	Y        json.RawMessage `json:"y"`
	Smiles   json.RawMessage `json:"smiles"`
}

// maxPeptideLine is the longest line the reader accepts (the real files' longest is 24 KB).
const maxPeptideLine = 64 << 20

// ReadPeptidesJSONL reads a gzip-compressed Peptides JSON Lines file (r streams the file at
// path, compressed) line by line, without holding the decompressed file: width labels per
// graph (10 for func), binary when labels is set. Errors name the file, the line (1-based),
// the graph (0-based) and the field, e.g.
// "train.jsonl.gz:17: graph 16: x[3][0] = 119: atomic_num takes ids 0..118 (OGB)".
func ReadPeptidesJSONL(path string, r io.Reader, width int, labels bool) ([]*Graph, error) {
	return readPeptidesJSONL(path, r, width, labels, 0)
}

// ReadPeptidesJSONLFile opens path and reads it with ReadPeptidesJSONL.
func ReadPeptidesJSONLFile(path string, width int, labels bool) ([]*Graph, error) {
	return readPeptidesJSONLFile(path, width, labels, 0)
}

func readPeptidesJSONLFile(path string, width int, labels bool, limit int) ([]*Graph, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readPeptidesJSONL(path, f, width, labels, limit)
}

// readPeptidesJSONL is ReadPeptidesJSONL stopping after limit graphs (limit ≤ 0: all).
func readPeptidesJSONL(path string, r io.Reader, width int, labels bool, limit int) ([]*Graph, error) {
	zr, err := gzip.NewReader(bufio.NewReaderSize(r, 1<<16))
	if err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("%s: truncated gzip file (no complete header): %w", path, err)
		}
		return nil, fmt.Errorf("%s: not a gzip file: %w", path, err)
	}
	defer zr.Close()
	sc := bufio.NewScanner(zr)
	sc.Buffer(make([]byte, 64<<10), maxPeptideLine)
	var gs []*Graph
	line := 0
	for sc.Scan() {
		line++
		g, err := parsePeptideLine(sc.Bytes(), width, labels)
		if err != nil {
			// A truncated stream ends in a partial line: report the truncation, not the JSON.
			if !sc.Scan() && sc.Err() != nil {
				return nil, peptideStreamError(path, line-1, sc.Err())
			}
			return nil, fmt.Errorf("%s:%d: graph %d: %w", path, line, len(gs), err)
		}
		gs = append(gs, g)
		if limit > 0 && len(gs) == limit {
			return gs, nil
		}
	}
	if err := sc.Err(); err != nil {
		return nil, peptideStreamError(path, line, err)
	}
	if len(gs) == 0 {
		return nil, fmt.Errorf("%s: no graphs in file", path)
	}
	return gs, nil
}

// peptideStreamError is streamError, with a line over the reader's limit said as such.
func peptideStreamError(path string, line int, err error) error {
	if errors.Is(err, bufio.ErrTooLong) {
		return fmt.Errorf("%s:%d: graph %d: line longer than %d MiB", path, line+1, line, maxPeptideLine>>20)
	}
	return streamError(path, line, err)
}

// parsePeptideLine reads one graph: the JSON object, every key present and no other, x and
// edge_attr rows of OGB's widths, src, dst and edge_attr of one length, y of width values; then
// the checks both peptide readers share.
func parsePeptideLine(text []byte, width int, labels bool) (*Graph, error) {
	if len(bytes.TrimSpace(text)) == 0 {
		return nil, errors.New("empty line: want one graph (a JSON object) per line")
	}
	var m peptideLine
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		if key, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			return nil, fmt.Errorf("unknown key %s: want exactly x, edge_attr, src, dst, y and smiles", key)
		}
		return nil, fmt.Errorf("malformed JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("malformed JSON: extra data after the object")
	}
	var missing []string
	for _, k := range []struct {
		name string
		raw  json.RawMessage
	}{{"x", m.X}, {"edge_attr", m.EdgeAttr}, {"src", m.Src}, {"dst", m.Dst}, {"y", m.Y}, {"smiles", m.Smiles}} {
		if k.raw == nil || string(k.raw) == "null" {
			missing = append(missing, k.name)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("missing (or null) key(s) %s", strings.Join(missing, ", "))
	}
	var smiles string
	if err := json.Unmarshal(m.Smiles, &smiles); err != nil {
		return nil, fmt.Errorf("smiles: want a string, got %s", jsonToken(m.Smiles, 0))
	}
	xs, err := parseIDRows("x", m.X, len(ogbAtomVocabs), "atom")
	if err != nil {
		return nil, err
	}
	x, err := ogbIDs("x", xs, ogbAtomColumns, ogbAtomVocabs)
	if err != nil {
		return nil, err
	}
	if len(x) == 0 {
		return nil, errNoAtoms
	}
	as, err := parseIDRows("edge_attr", m.EdgeAttr, len(ogbBondVocabs), "bond")
	if err != nil {
		return nil, err
	}
	src, err := parseIDs("src", m.Src)
	if err != nil {
		return nil, err
	}
	dst, err := parseIDs("dst", m.Dst)
	if err != nil {
		return nil, err
	}
	if e := len(as) / len(ogbBondVocabs); len(src) != len(dst) || len(src) != e {
		return nil, fmt.Errorf("src, dst and edge_attr: lengths %d, %d and %d, want one per edge", len(src), len(dst), e)
	}
	attr, err := ogbIDs("edge_attr", as, ogbBondColumns, ogbBondVocabs)
	if err != nil {
		return nil, err
	}
	s32, d32, err := peptideEdges(src, dst, len(x)/len(ogbAtomVocabs))
	if err != nil {
		return nil, fmt.Errorf("src/dst: %w", err)
	}
	var ys []*float64
	if err := json.Unmarshal(m.Y, &ys); err != nil {
		return nil, fmt.Errorf("y: want a list of %d labels: %w", width, err)
	}
	if len(ys) != width {
		return nil, fmt.Errorf("y: want %d labels, got %d", width, len(ys))
	}
	vals := make([]float64, width)
	for k, v := range ys {
		vals[k] = math.NaN() // null: a missing label
		if v != nil {
			vals[k] = *v
		}
	}
	y, err := peptideValues(vals, labels)
	if err != nil {
		return nil, err
	}
	return newPeptide(x, attr, s32, d32, y)
}

// idCursor walks a JSON value that encoding/json has already found well-formed.
type idCursor struct {
	b []byte
	i int
}

// skip moves past white space.
func (c *idCursor) skip() {
	for c.i < len(c.b) && (c.b[c.i] == ' ' || c.b[c.i] == '\t' || c.b[c.i] == '\n' || c.b[c.i] == '\r') {
		c.i++
	}
}

// next consumes ch (after white space) if it comes next.
func (c *idCursor) next(ch byte) bool {
	c.skip()
	if c.i < len(c.b) && c.b[c.i] == ch {
		c.i++
		return true
	}
	return false
}

// int consumes an integer; ok is false (nothing consumed) when the next value is not one, or
// not one of at most 18 digits.
func (c *idCursor) int() (v int64, ok bool) {
	c.skip()
	j, neg := c.i, false
	if j < len(c.b) && c.b[j] == '-' {
		neg = true
		j++
	}
	start := j
	for j < len(c.b) && c.b[j] >= '0' && c.b[j] <= '9' && j-start < 19 {
		v = v*10 + int64(c.b[j]-'0')
		j++
	}
	if j == start || j-start > 18 || (j < len(c.b) && (c.b[j] == '.' || c.b[j] == 'e' || c.b[j] == 'E' || (c.b[j] >= '0' && c.b[j] <= '9'))) {
		return 0, false
	}
	c.i = j
	if neg {
		v = -v
	}
	return v, true
}

// end reports whether only white space is left.
func (c *idCursor) end() bool {
	c.skip()
	return c.i == len(c.b)
}

// jsonToken is the JSON text at offset i, shortened, for an error message.
func jsonToken(b []byte, i int) string {
	b = bytes.TrimLeft(b[i:], " \t\r\n")
	if n := bytes.IndexAny(b, ",]}"); n > 0 {
		b = b[:n]
	}
	if len(b) > 24 {
		return string(b[:24]) + "…"
	}
	return string(b)
}

// parseIDs reads a JSON list of integers.
func parseIDs(field string, raw []byte) ([]int64, error) {
	c := &idCursor{b: raw}
	if !c.next('[') {
		return nil, fmt.Errorf("%s: want a list of integers, got %s", field, jsonToken(raw, 0))
	}
	vals := make([]int64, 0, len(raw)/3)
	if !c.next(']') {
		for {
			v, ok := c.int()
			if !ok {
				return nil, fmt.Errorf("%s[%d]: want an integer, got %s", field, len(vals), jsonToken(raw, c.i))
			}
			vals = append(vals, v)
			if c.next(']') {
				break
			}
			if !c.next(',') {
				return nil, fmt.Errorf("%s: malformed list after item %d", field, len(vals)-1)
			}
		}
	}
	if !c.end() {
		return nil, fmt.Errorf("%s: malformed list", field)
	}
	return vals, nil
}

// parseIDRows reads a JSON list of rows, each a list of width integers (the OGB columns of
// what), and returns them row-major.
func parseIDRows(field string, raw []byte, width int, what string) ([]int64, error) {
	c := &idCursor{b: raw}
	if !c.next('[') {
		return nil, fmt.Errorf("%s: want a list of rows, got %s", field, jsonToken(raw, 0))
	}
	vals := make([]int64, 0, len(raw)/2)
	if !c.next(']') {
		for row := 0; ; row++ {
			if !c.next('[') {
				return nil, fmt.Errorf("%s[%d]: want a row of the %d OGB %s columns, got %s", field, row, width, what, jsonToken(raw, c.i))
			}
			n := 0
			if !c.next(']') {
				for {
					v, ok := c.int()
					if !ok {
						return nil, fmt.Errorf("%s[%d][%d]: want an integer id, got %s", field, row, n, jsonToken(raw, c.i))
					}
					vals = append(vals, v)
					n++
					if c.next(']') {
						break
					}
					if !c.next(',') {
						return nil, fmt.Errorf("%s[%d]: malformed row", field, row)
					}
				}
			}
			if n != width {
				return nil, fmt.Errorf("%s[%d]: want the %d OGB %s columns, got %d values", field, row, width, what, n)
			}
			if c.next(']') {
				break
			}
			if !c.next(',') {
				return nil, fmt.Errorf("%s: malformed list after row %d", field, row)
			}
		}
	}
	if !c.end() {
		return nil, fmt.Errorf("%s: malformed list", field)
	}
	return vals, nil
}
