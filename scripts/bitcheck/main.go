package bitcheck

import (
	"flag"
	"fmt"
	"io"
)

// Main is the comparer's command line (./cmp): bitcmp [-a NAME] [-b NAME] [-threads] TREE_A
// TREE_B. It prints each difference on a line of its own and a summary, and returns the exit
// status: 0 when every run's files are identical (less timing), 1 on a difference, 2 on a usage
// error or a tree that cannot be read.
func Main(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bitcmp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o Options
	fs.StringVar(&o.A, "a", "A", "the first tree's name in messages")
	fs.StringVar(&o.B, "b", "B", "the second tree's name in messages")
	fs.BoolVar(&o.Threads, "threads", false, "the trees ran at different GOMAXPROCS: do not compare result.json's "+ThreadKey)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: bitcmp [-a NAME] [-b NAME] [-threads] TREE_A TREE_B\n\n"+
			"Compares every run folder under TREE_A with the one at the same path under TREE_B:\n"+
			"config.yaml, metrics.jsonl, result.json and checkpoint.bin, bit for bit less timing.\n"+
			"Exit status 0: identical; 1: a difference (each printed); 2: usage or unreadable tree.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 2 {
		fs.Usage()
		return 2
	}
	rep, err := CompareTrees(fs.Arg(0), fs.Arg(1), o)
	if err != nil {
		fmt.Fprintf(stderr, "bitcmp: %v\n", err)
		return 2
	}
	what := fmt.Sprintf("%s against %s: %d %s, %d %s", o.A, o.B, rep.Runs, plural(rep.Runs, "run", "runs"), rep.Files, plural(rep.Files, "file", "files"))
	if len(rep.Diffs) > 0 {
		for _, d := range rep.Diffs {
			fmt.Fprintf(stdout, "DIFFERS %s\n", d.Format(o))
		}
		fmt.Fprintf(stdout, "bitcmp: %s compared, %d %s\n", what, len(rep.Diffs), plural(len(rep.Diffs), "differs", "differ"))
		return 1
	}
	fmt.Fprintf(stdout, "bitcmp: %s identical\n", what)
	return 0
}
