package download

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/rewiregnn/rewiregnn/runfiles"
)

// hashFile returns a file's size and hex SHA-256.
func hashFile(path string) (int64, string, error) {
	file, err := os.Open(path)
	if err != nil {
		return 0, "", err
	}
	defer file.Close()
	h := sha256.New()
	n, err := io.Copy(h, file)
	if err != nil {
		return 0, "", fmt.Errorf("reading %s: %w", path, err)
	}
	return n, hex.EncodeToString(h.Sum(nil)), nil
}

// lower is a hex digest in the case hashFile writes.
func lower(sum string) string { return strings.ToLower(sum) }

// sumLine parses one line of a sha256sum file: "<hex>  <name>" (text mode) or "<hex> *<name>"
// (binary mode).
func sumLine(line string) (sum, name string, ok bool) {
	sum, rest, ok := strings.Cut(line, " ")
	if b, err := hex.DecodeString(sum); !ok || err != nil || len(b) != 32 || len(rest) < 2 {
		return "", "", false
	}
	if rest[0] != ' ' && rest[0] != '*' {
		return "", "", false
	}
	return lower(sum), rest[1:], true
}

// readSums returns the lines of dir's SHA256SUMS (none when it does not exist), failing on a
// line that is not blank, a comment or a sum.
func readSums(dir string) ([]string, error) {
	path := filepath.Join(dir, SumsFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for i := 1; sc.Scan(); i++ {
		line := strings.TrimRight(sc.Text(), "\r")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if _, _, ok := sumLine(line); !ok {
			return nil, fmt.Errorf("%s line %d: want \"<sha256 hex>  <file name>\", got %q", path, i, line)
		}
		lines = append(lines, line)
	}
	return lines, sc.Err()
}

// recordedSum is the sum dir's SHA256SUMS records for name, "" when none.
func recordedSum(dir, name string) (string, error) {
	lines, err := readSums(dir)
	for _, line := range lines {
		if sum, n, _ := sumLine(line); n == name {
			return sum, nil
		}
	}
	return "", err
}

// recordSum sets name's sum in dir's SHA256SUMS, keeping the other lines.
func recordSum(dir, name, sum string) error {
	lines, err := readSums(dir)
	if err != nil {
		return err
	}
	entry := sum + "  " + name
	out := make([]string, 0, len(lines)+1)
	for _, line := range lines {
		if _, n, _ := sumLine(line); n != name {
			out = append(out, line)
		}
	}
	out = append(out, entry)
	return runfiles.WriteAtomic(filepath.Join(dir, SumsFile), []byte(strings.Join(out, "\n")+"\n"), 0o644)
}

// syncDir flushes a folder's entries (a rename) to disk, where the system supports it.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync() // best effort: some systems refuse to sync a folder
		d.Close()
	}
}

// Status is what the data folder holds of an archive.
type Status struct {
	Path     string // where the archive belongs
	Present  bool   // the final file exists
	Partial  int64  // bytes of an unfinished download (.part); 0 when none
	Size     int64  // size of the final file
	SHA256   string // sum of the final file
	Want     string // the expected sum: published, else recorded; "" when neither
	Recorded bool   // Want was recorded on the first download (trust on first use)
	Verified bool   // the final file matches the expected size and sum (a recorded one included)
	Unpacked bool   // the zip was extracted and its marker holds the file's sum
}

// Inspect reports what the data folder holds of an archive, reading (hashing) the file when it
// is there. A missing folder is not an error: nothing is present.
func Inspect(dataDir string, a Archive) (Status, error) {
	st := Status{Path: a.Path(dataDir)}
	if err := a.validate(); err != nil {
		return st, err
	}
	want := lower(a.SHA256)
	if want == "" {
		sum, err := recordedSum(a.dir(dataDir), a.Name)
		if err != nil {
			return st, err
		}
		want, st.Recorded = sum, sum != ""
	}
	st.Want = want
	if fi, err := os.Stat(st.Path + partSuffix); err == nil {
		st.Partial = fi.Size()
	}
	if err := st.hash(); err != nil || !st.Present {
		return st, err
	}
	size, sum := st.Size, st.SHA256
	st.Verified = want != "" && sum == want && (a.Size == 0 || size == a.Size)
	if b, err := os.ReadFile(st.Path + unpackedSuffix); err == nil && strings.TrimSpace(string(b)) == sum {
		st.Unpacked = true
	}
	return st, nil
}

// hash fills Present, Size and SHA256 from the file at st.Path; a missing file leaves Present
// false and is no error.
func (st *Status) hash() error {
	size, sum, err := hashFile(st.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	st.Present, st.Size, st.SHA256 = true, size, sum
	return nil
}
