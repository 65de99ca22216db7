package main

import (
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/rewiregnn/rewiregnn/runlog"
)

// rebuildBoard is -rebuild-tb DIR: it rebuilds DIR's TensorBoard folder (runlog.RebuildBoard)
// and refuses any other flag, since it reads everything from the run directory.
func rebuildBoard(fs *flag.FlagSet, dir string) int {
	var others []string
	fs.Visit(func(f *flag.Flag) {
		if f.Name != "rebuild-tb" {
			others = append(others, "-"+f.Name)
		}
	})
	if len(others) > 0 {
		sort.Strings(others)
		fmt.Fprintf(os.Stderr, "train: -rebuild-tb reads everything from the run directory; drop %s\n", strings.Join(others, ", "))
		return exitUsage
	}
	if _, err := runlog.RebuildBoard(dir, os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "train: %v\n", err)
		return 1
	}
	return 0
}
