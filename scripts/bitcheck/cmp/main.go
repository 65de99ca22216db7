// Command cmp is scripts/bitcheck.sh's comparer: bitcheck.Main on the command line.
//
//	go run ./scripts/bitcheck/cmp [-a NAME] [-b NAME] [-threads] TREE_A TREE_B
package main

import (
	"os"

	"github.com/rewiregnn/rewiregnn/scripts/bitcheck"
)

func main() {
	os.Exit(bitcheck.Main(os.Args[1:], os.Stdout, os.Stderr))
}
