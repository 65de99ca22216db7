// Command data fetches the public archives of the benchmark datasets (as PyTorch Geometric
// distributes them) into the data folder, and lists what the folder holds of them and of the
// files it cannot fetch (Peptides-func's JSON Lines files and LRGB's raw files, checked against
// their recorded SHA-256 sums).
//
//	go run ./cmd/data get [-data DIR] [-retries N] zinc aqsol mnist cifar10 peptides-func peptides-struct | all
//	go run ./cmd/data list [-data DIR]
//
// all is the paper's datasets (zinc aqsol mnist cifar10); the LRGB peptides, beyond the paper,
// are fetched when named.
//
// The data folder is -data, else $REWIREGNN_DATA, else ../shared/data; get creates the folder
// -data or $REWIREGNN_DATA names when it does not exist yet. Interrupted downloads are resumed
// by running get again; verified files are not downloaded again. Archives without a published
// checksum get theirs recorded in <folder>/SHA256SUMS on the first download (a warning says
// so) and are checked against it afterwards. Exit status: 2 for a bad command line, 1 when a
// download fails.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/rewiregnn/rewiregnn/data"
	"github.com/rewiregnn/rewiregnn/download"
	"github.com/rewiregnn/rewiregnn/prep"
)

// afterFetch is called after every archive of a dataset has been fetched and verified, with the
// dataset's name, the data folder and the cache folder ("" for none): convert, which reads the
// files and keeps their graphs in the preprocessing cache (tests replace it).
var afterFetch = convert

// The registry; tests point these at a local server.
var (
	archivesOf   = download.Archives
	localFilesOf = download.LocalFiles // listed and checked, never fetched
	datasetNames = download.Datasets
	allDatasets  = download.PaperDatasets // what "all" fetches
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// usageError is a bad command line (exit status 2).
type usageError struct{ error }

// run executes the command line and returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := dataMain(ctx, args, stdout, stderr)
	var ue usageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintln(stderr, "data:", err)
		fmt.Fprintln(stderr, usage)
		return 2
	default:
		fmt.Fprintln(stderr, "data:", err)
		return 1
	}
}

const usage = `usage: data get [-data DIR] [-cache DIR|auto|off] [-retries N] DATASET… | all
       data list [-data DIR]
all: the paper's datasets (zinc aqsol mnist cifar10); name peptides-func and peptides-struct to fetch them`

// dataMain dispatches to the subcommand.
func dataMain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usageError{errors.New("missing subcommand: get or list")}
	}
	switch args[0] {
	case "get":
		return get(ctx, args[1:], stdout, stderr)
	case "list":
		return list(args[1:], stdout)
	case "help", "-h", "-help", "--help":
		fmt.Fprintln(stdout, usage)
		return nil
	}
	return usageError{fmt.Errorf("unknown subcommand %q: want get or list", args[0])}
}

// parse parses flags that may come before, between or after the positional arguments, which
// it returns. -h prints the usage and the flags on stdout.
func parse(fs *flag.FlagSet, args []string, stdout io.Writer) ([]string, error) {
	fs.SetOutput(io.Discard) // the error is printed once, by run
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fmt.Fprintln(stdout, usage)
				fs.SetOutput(stdout)
				fs.PrintDefaults()
				return nil, err
			}
			return nil, usageError{err}
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos, args = append(pos, fs.Arg(0)), fs.Args()[1:]
	}
}

// dataFlag declares the -data flag.
func dataFlag(fs *flag.FlagSet) *string {
	return fs.String("data", "", "benchmark data folder (default $"+data.EnvDataDir+", else "+data.DefaultDataDir+")")
}

// get fetches the named datasets, reporting every failure before returning.
func get(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("get", flag.ContinueOnError)
	dir := dataFlag(fs)
	retries := fs.Int("retries", 3, "retries of a failed transfer (each resumes it)")
	cache := fs.String("cache", "auto", "preprocessing cache folder the fetched graphs are converted into (auto: the user cache folder's rewiregnn/prep; off: only read them)")
	names, err := parse(fs, args, stdout)
	if err != nil {
		return err
	}
	if *retries < 0 {
		return usageError{fmt.Errorf("-retries %d: want 0 or more", *retries)}
	}
	sets, err := selectDatasets(names)
	if err != nil {
		return err
	}
	root, err := dataDirForGet(*dir, stdout)
	if err != nil {
		return err
	}
	cacheDir, err := prep.ResolveDir(*cache)
	if err != nil {
		return fmt.Errorf("-cache %s: %w; pass -cache DIR or -cache off", *cache, err)
	}
	o := download.Options{Progress: stderr, Log: stderr, Retries: *retries}
	var failed []string
	for _, name := range sets {
		if err := fetchDataset(ctx, root, name, cacheDir, o, stdout); err != nil {
			fmt.Fprintln(stderr, "data:", err)
			failed = append(failed, name)
		}
		if ctx.Err() != nil {
			break
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d of %d datasets not fetched: %s (run the command again to resume)",
			len(failed), len(sets), strings.Join(failed, ", "))
	}
	return nil
}

// selectDatasets checks the dataset names of the command line; all means every one of the
// paper's.
func selectDatasets(names []string) ([]string, error) {
	known := datasetNames()
	if len(names) == 0 {
		return nil, usageError{fmt.Errorf("get: name the datasets to fetch (%s) or all", strings.Join(known, ", "))}
	}
	var out []string
	seen := map[string]bool{}
	for _, n := range names {
		group := []string{n}
		if n == "all" {
			group = allDatasets()
		} else if _, err := archivesOf(n); err != nil {
			return nil, usageError{err}
		}
		for _, d := range group {
			if !seen[d] {
				seen[d] = true
				out = append(out, d)
			}
		}
	}
	return out, nil
}

// dataDirForGet is the folder get writes into: the one -data or $REWIREGNN_DATA names,
// created when missing, else the default, which must exist.
func dataDirForGet(dir string, stdout io.Writer) (string, error) {
	from := "-data"
	if dir == "" {
		dir, from = os.Getenv(data.EnvDataDir), "$"+data.EnvDataDir
	}
	if dir == "" {
		return data.ResolveDataDir("")
	}
	if st, err := os.Stat(dir); err == nil && st.IsDir() {
		return data.ResolveDataDir(dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("creating the data folder %s (from %s): %w", dir, from, err)
	}
	fmt.Fprintf(stdout, "created the data folder %s\n", dir)
	return dir, nil
}

// fetchDataset fetches every archive of a dataset (all of them, even after a failure, so that
// each failure is reported), then calls the convert hook.
func fetchDataset(ctx context.Context, root, name, cacheDir string, o download.Options, stdout io.Writer) error {
	archives, err := archivesOf(name)
	if err != nil {
		return err
	}
	var errs []error
	for _, a := range archives {
		res, err := download.Fetch(ctx, root, a, o)
		if err != nil {
			errs = append(errs, err)
			if ctx.Err() != nil {
				break
			}
			continue
		}
		fmt.Fprintln(stdout, summary(a, res))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if afterFetch != nil {
		if err := afterFetch(name, root, cacheDir, stdout); err != nil {
			return fmt.Errorf("%s: converting the fetched files in %s: %w", name, root, err)
		}
	}
	return nil
}

// summary is the line get prints for a fetched archive.
func summary(a download.Archive, res download.Result) string {
	what := "downloaded"
	switch {
	case res.Skipped:
		what = "already present"
	case res.Resumed:
		what = "downloaded (resumed)"
	}
	line := fmt.Sprintf("%s: %s %s (%s, sha256 %s", a.Dataset, res.Path, what, download.FormatSize(res.Size), res.SHA256)
	if res.Recorded {
		line += ", recorded in " + download.SumsFile
	}
	line += ")"
	switch {
	case res.Unpacked:
		line += ", extracted into " + filepath.Dir(res.Path)
	case res.UnpackSkipped:
		line += ", extracted already"
	}
	return line
}
