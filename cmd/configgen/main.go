// Command configgen writes the per-setting config files configs/<dataset>/<model>-<encoding>[-cls]-r<r>.yaml
// from the grids in configs/grids (every grid without overrides: the paper's tables and
// figures), and removes generated files no grid gives any more. With -check it changes nothing
// and exits with status 1 if a file is missing, stale or out of date.
//
//	go run ./cmd/configgen [-configs configs] [-check]
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/rewiregnn/rewiregnn/config"
	"github.com/rewiregnn/rewiregnn/runfiles"
)

func main() {
	dir := flag.String("configs", "configs", "the configs folder (holding grids/)")
	check := flag.Bool("check", false, "report differences and exit 1 instead of writing")
	flag.Parse()
	if err := run(*dir, *check); err != nil {
		fmt.Fprintln(os.Stderr, "configgen:", err)
		os.Exit(1)
	}
}

func run(dir string, check bool) error {
	want, err := Generate(dir)
	if err != nil {
		return err
	}
	have, err := Generated(dir)
	if err != nil {
		return err
	}
	var changes []string
	for _, p := range sortedKeys(want) {
		old, ok := have[p]
		switch {
		case !ok:
			changes = append(changes, "new      "+p)
		case !bytes.Equal(old, want[p]):
			changes = append(changes, "changed  "+p)
		default:
			continue
		}
		if !check {
			if err := runfiles.WriteAtomic(filepath.Join(dir, filepath.FromSlash(p)), want[p], 0o644); err != nil {
				return err
			}
		}
	}
	for _, p := range sortedKeys(have) {
		if _, ok := want[p]; ok {
			continue
		}
		changes = append(changes, "removed  "+p)
		if !check {
			full := filepath.Join(dir, filepath.FromSlash(p))
			if err := os.Remove(full); err != nil {
				return err
			}
			os.Remove(filepath.Dir(full)) // the dataset folder, if now empty
		}
	}
	for _, c := range changes {
		fmt.Println(c)
	}
	if check && len(changes) > 0 {
		return fmt.Errorf("%d per-setting config files differ from the grids; run go run ./cmd/configgen", len(changes))
	}
	fmt.Printf("%d per-setting config files from the grids in %s, %d changed\n", len(want), filepath.Join(dir, "grids"), len(changes))
	return nil
}

// Generate returns the per-setting files the grids of dir/grids give, by path under dir.
func Generate(dir string) (map[string][]byte, error) {
	grids, err := config.LoadGrids(filepath.Join(dir, "grids"), nil)
	if err != nil {
		return nil, err
	}
	return config.SettingFiles(grids)
}

// Generated returns the generated files (those starting with config.GeneratedHeader) now in
// the dataset folders of dir, by path under dir.
func Generated(dir string) (map[string][]byte, error) {
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || filepath.Ext(p) != ".yaml" {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if strings.HasPrefix(string(data), config.GeneratedHeader) {
			out[filepath.ToSlash(rel)] = data
		}
		return nil
	})
	return out, err
}

func sortedKeys(m map[string][]byte) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
