// Command docfacts checks, or with -w rewrites, the figures the docs quote from the repository's
// files (configs counted, committed runs' epochs, test metrics and minutes, parked runs' epochs),
// written between <!--fact:KIND FOLDERS-->VALUE<!--/fact--> markers in README.md and docs/.
//
//	go run ./cmd/docfacts        # list the facts that disagree with the files (exit 1 if any)
//	go run ./cmd/docfacts -w     # rewrite them
//	go run ./cmd/docfacts -kinds # the facts a marker may name
package main

import (
	"flag"
	"fmt"
	"os"
	"sort"

	"github.com/rewiregnn/rewiregnn/internal/docfacts"
)

func main() {
	write := flag.Bool("w", false, "rewrite the facts that disagree with the files")
	root := flag.String("root", ".", "the repository root")
	kinds := flag.Bool("kinds", false, "list the facts a marker may name, and exit")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "docfacts: unexpected argument %q (flags: -w, -root DIR, -kinds)\n", flag.Arg(0))
		os.Exit(2)
	}
	if *kinds {
		var ks []string
		for k := range docfacts.Kinds {
			ks = append(ks, k)
		}
		sort.Strings(ks)
		for _, k := range ks {
			fmt.Printf("%-10s %s\n", k, docfacts.Kinds[k])
		}
		return
	}
	run := docfacts.Check
	if *write {
		run = docfacts.Update
	}
	ms, err := run(*root)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for _, m := range ms {
		if *write {
			fmt.Printf("%s:%d: %s: %q -> %q\n", m.File, m.Line, m.Fact, m.Have, m.Want)
		} else {
			fmt.Println(m)
		}
	}
	if !*write && len(ms) > 0 {
		fmt.Fprintf(os.Stderr, "docfacts: %d facts disagree with the files; `go run ./cmd/docfacts -w` rewrites them\n", len(ms))
		os.Exit(1)
	}
}
