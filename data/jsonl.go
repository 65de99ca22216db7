package data

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// moleculeLine is one line of the JSON Lines graph files of the shared data folder.
type moleculeLine struct {
	X        *[]int32 `json:"x"`
	Src      *[]int32 `json:"src"`
	Dst      *[]int32 `json:"dst"`
	EdgeAttr *[]int32 `json:"edge_attr"`
	Y        *float64 `json:"y"`
	Smiles   string   `json:"smiles"`
}

// ReadMolecules reads a gzip-compressed JSON Lines file of molecular graphs (keys x, src, dst,
// edge_attr, y, smiles). Node types must lie in [0, nodeVocab) and bond types in
// [0, edgeVocab). Errors name the file and line.
func ReadMolecules(path string, nodeVocab, edgeVocab int) ([]*Graph, error) {
	raw, err := readGzip(path)
	if err != nil {
		return nil, err
	}
	return parseMolecules(path, bytes.NewReader(raw), nodeVocab, edgeVocab)
}

func parseMolecules(path string, r io.Reader, nodeVocab, edgeVocab int) ([]*Graph, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	var gs []*Graph
	line := 0
	for sc.Scan() {
		line++
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		g, err := parseMolecule(text, nodeVocab, edgeVocab)
		if err != nil {
			// A truncated stream ends in a partial line: report the truncation, not the JSON.
			if !sc.Scan() && sc.Err() != nil {
				return nil, streamError(path, line-1, sc.Err())
			}
			return nil, fmt.Errorf("%s: line %d: %w", path, line, err)
		}
		gs = append(gs, g)
	}
	if err := sc.Err(); err != nil {
		return nil, streamError(path, line, err)
	}
	if len(gs) == 0 {
		return nil, fmt.Errorf("%s: no graphs in file", path)
	}
	return gs, nil
}

func parseMolecule(text []byte, nodeVocab, edgeVocab int) (*Graph, error) {
	var m moleculeLine
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("malformed JSON: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("malformed JSON: extra data after the object")
	}
	var missing []string
	for _, k := range []struct {
		name string
		ok   bool
	}{{"x", m.X != nil}, {"src", m.Src != nil}, {"dst", m.Dst != nil}, {"edge_attr", m.EdgeAttr != nil}, {"y", m.Y != nil}} {
		if !k.ok {
			missing = append(missing, k.name)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("missing key(s) %s", strings.Join(missing, ", "))
	}
	x, src, dst, attr := *m.X, *m.Src, *m.Dst, *m.EdgeAttr
	if len(src) != len(dst) || len(src) != len(attr) {
		return nil, fmt.Errorf("src, dst and edge_attr have lengths %d, %d, %d", len(src), len(dst), len(attr))
	}
	for i, t := range x {
		if t < 0 || int(t) >= nodeVocab {
			return nil, fmt.Errorf("x[%d] = %d outside the %d node types", i, t, nodeVocab)
		}
	}
	for i, t := range attr {
		if t < 0 || int(t) >= edgeVocab {
			return nil, fmt.Errorf("edge_attr[%d] = %d outside the %d edge types", i, t, edgeVocab)
		}
	}
	g := &Graph{
		N:    len(x),
		Src:  src,
		Dst:  dst,
		Node: Features{CatDim: 1, Cat: x},
		Edge: Features{CatDim: 1, Cat: attr},
		Y:    []float32{float32(*m.Y)},
	}
	if err := g.Validate(); err != nil {
		return nil, err
	}
	return g, nil
}

// streamError describes a read error of a compressed JSON Lines file after line complete lines.
func streamError(path string, line int, err error) error {
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, gzip.ErrChecksum) || errors.Is(err, gzip.ErrHeader) {
		return fmt.Errorf("%s: truncated or corrupt gzip data after line %d: %w", path, line, err)
	}
	return fmt.Errorf("%s: reading after line %d: %w", path, line, err)
}
