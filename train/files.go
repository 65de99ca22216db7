package train

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
)

// WriteMetrics writes the epochs as JSON Lines, atomically.
func WriteMetrics(path string, eps []Epoch) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for i := range eps {
		if err := enc.Encode(&eps[i]); err != nil {
			return fmt.Errorf("%s: epoch %d: %w", path, eps[i].Epoch, err)
		}
	}
	return writeAtomic(path, buf.Bytes())
}

// ReadMetrics reads a metrics.jsonl file, rejecting unknown keys and out-of-order epochs with
// the line number.
func ReadMetrics(path string) ([]Epoch, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var eps []Epoch
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for line := 1; sc.Scan(); line++ {
		var ep Epoch
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&ep); err != nil {
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

// WriteResult writes result.json atomically.
func WriteResult(path string, r *Result) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return writeAtomic(path, append(b, '\n'))
}

// ReadResult reads and checks a result.json.
func ReadResult(path string) (*Result, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Result
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if r.Name == "" || r.Metric == "" || r.StoppedBy == "" {
		return nil, fmt.Errorf("%s: missing name, metric or stopped_by", path)
	}
	return &r, nil
}
