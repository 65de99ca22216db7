package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path"

	"github.com/rewiregnn/rewiregnn/data"
	"github.com/rewiregnn/rewiregnn/download"
)

// unknownSum is what list prints for a size or sum that is not published.
const unknownSum = "unknown: recorded on first download"

// list prints every dataset's archives, where they come from, their known size and sum, and
// what the data folder holds of them. It fails (status 1) when a file cannot be read or does
// not match its sum.
func list(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("list", flag.ContinueOnError)
	dir := dataFlag(fs)
	pos, err := parse(fs, args, stdout)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageError{fmt.Errorf("list: unexpected argument %q (flags only)", pos[0])}
	}
	root := listDataDir(*dir)
	fmt.Fprintf(stdout, "data folder: %s", root)
	if st, err := os.Stat(root); err != nil || !st.IsDir() {
		fmt.Fprint(stdout, " (does not exist)")
	}
	fmt.Fprintln(stdout)
	var errs []error
	for _, name := range datasetNames() {
		archives, err := archivesOf(name)
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, name)
		for _, a := range archives {
			if err := listArchive(stdout, root, a); err != nil {
				errs = append(errs, err)
			}
		}
		for _, f := range localFilesOf(name) {
			if err := listLocal(stdout, root, f); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// listLocal prints a file of the data folder that is not fetched (Peptides-func's JSON Lines
// files and LRGB's raw files), where it comes from, and whether it is there and matches its sum.
func listLocal(w io.Writer, root string, f download.LocalFile) error {
	st, err := download.InspectLocal(root, f)
	fmt.Fprintf(w, "  %s (%s; not fetched)\n", path.Join(f.Dest, f.Name), f.Kind)
	fmt.Fprintf(w, "    from:   %s\n", f.Origin)
	fmt.Fprintf(w, "    size:   %d bytes (%s)\n", f.Size, download.FormatSize(f.Size))
	fmt.Fprintf(w, "    sha256: %s\n", f.SHA256)
	var state string
	bad := false
	switch {
	case err != nil:
		state, bad = "cannot be checked: "+err.Error(), true
	case !st.Present:
		state = "missing (" + st.Path + ")"
	case st.Verified:
		state = "present, verified"
	default:
		state, bad = fmt.Sprintf("present but does NOT match (sha256 %s, %d bytes): copy it again from its source", st.SHA256, st.Size), true
	}
	fmt.Fprintf(w, "    state:  %s\n", state)
	if bad {
		return fmt.Errorf("%s: %s: %s", f.Dataset, st.Path, state)
	}
	return nil
}

// listDataDir is the data folder list reads: -data, else $REWIREGNN_DATA, else the default;
// it need not exist.
func listDataDir(dir string) string {
	if dir == "" {
		dir = os.Getenv(data.EnvDataDir)
	}
	if dir == "" {
		dir = data.DefaultDataDir
	}
	return dir
}

// listArchive prints one archive and its state in the data folder.
func listArchive(w io.Writer, root string, a download.Archive) error {
	st, err := download.Inspect(root, a)
	kind := "file"
	if a.Unzip {
		kind = "zip, extracted in place"
	}
	fmt.Fprintf(w, "  %s (%s)\n", a.Name, kind)
	fmt.Fprintf(w, "    url:    %s\n", a.URL)
	size, sum := unknownSum, unknownSum
	if a.Size > 0 {
		size = fmt.Sprintf("%d bytes (%s)", a.Size, download.FormatSize(a.Size))
	}
	switch {
	case a.SHA256 != "":
		sum = a.SHA256
	case st.Recorded:
		sum = fmt.Sprintf("%s (%s: %s)", unknownSum, download.SumsFile, st.Want)
	}
	fmt.Fprintf(w, "    size:   %s\n", size)
	fmt.Fprintf(w, "    sha256: %s\n", sum)
	state, bad := describe(st, a.Unzip)
	if err != nil {
		state, bad = "cannot be checked: "+err.Error(), true
	}
	fmt.Fprintf(w, "    state:  %s\n", state)
	if bad {
		return fmt.Errorf("%s: %s: %s", a.Dataset, st.Path, state)
	}
	return nil
}

// describe words an archive's state in the data folder; bad reports a file that does not match.
func describe(st download.Status, unzip bool) (state string, bad bool) {
	switch {
	case !st.Present && st.Partial > 0:
		return fmt.Sprintf("partly downloaded (%s in %s.part): run get to resume", download.FormatSize(st.Partial), st.Path), false
	case !st.Present:
		return "missing (" + st.Path + ")", false
	case st.Want == "":
		state = "present, not verified: no sum published or recorded (get records it)"
	case st.Verified && st.Recorded:
		state = "present, verified against the sum recorded on first download"
	case st.Verified:
		state = "present, verified"
	default:
		return fmt.Sprintf("present but does NOT match (sha256 %s, %s): run get to download it again", st.SHA256, download.FormatSize(st.Size)), true
	}
	switch {
	case st.Unpacked:
		state += ", extracted"
	case unzip:
		state += ", not extracted yet (run get)"
	}
	return state, false
}
