package runfiles

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
)

// WriteResult writes result.json atomically.
func WriteResult(path string, r *Result) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return WriteAtomic(path, append(b, '\n'), FilePerm)
}

// ReadResult reads and verifies a result.json: it must parse as a Result with no unknown keys
// and nothing after the object, and pass Check. Errors name the file and the key. A diverged
// result (Result.Diverged) reads without metrics, whatever figures an older file holds.
func ReadResult(path string) (*Result, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var r Result
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%s: data after the JSON object", path)
	}
	if err := Check(&r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if r.Diverged() {
		r.clearMetrics() // an older file's figures of its last good epoch are no final metrics
	}
	return &r, nil
}

// WriteMetrics writes the epochs as JSON Lines (metrics.jsonl), atomically.
func WriteMetrics(path string, eps []Epoch) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for i := range eps {
		if err := enc.Encode(&eps[i]); err != nil {
			return fmt.Errorf("%s: epoch %d: %w", path, eps[i].Epoch, err)
		}
	}
	return WriteAtomic(path, buf.Bytes(), FilePerm)
}

// ReadMetrics reads a metrics.jsonl file (one Epoch per line, blank lines skipped), rejecting
// unknown keys and epochs out of order; errors name the file and the line.
func ReadMetrics(path string) ([]Epoch, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParseMetrics(path, f)
}

// ParseMetrics is ReadMetrics for metrics.jsonl lines read from r; path names them in errors.
func ParseMetrics(path string, r io.Reader) ([]Epoch, error) {
	var eps []Epoch
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for line := 1; sc.Scan(); line++ {
		s := bytes.TrimSpace(sc.Bytes())
		if len(s) == 0 {
			continue
		}
		var ep Epoch
		dec := json.NewDecoder(bytes.NewReader(s))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&ep); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		if err := checkProvenance(ep.ConfigHash, ep.Departures); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		if ep.Epoch != len(eps) {
			return nil, fmt.Errorf("%s:%d: epoch %d, want %d", path, line, ep.Epoch, len(eps))
		}
		eps = append(eps, ep)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return eps, nil
}
