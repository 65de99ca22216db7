package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/rewiregnn/rewiregnn/data"
	"github.com/rewiregnn/rewiregnn/prep"
)

// convert reads every split of a fetched dataset with the project's readers, so a damaged or
// unexpected file is reported now rather than at the first training run, and keeps the graphs
// in the preprocessing cache (encoding "raw", keyed by the public source), from which every
// run and every (r, encoding) variant then starts. cacheDir "" only reads. A distribution that
// runs do not read (Peptides-func beside its JSON Lines files) is read, not cached.
func convert(dataset, dataDir, cacheDir string, out io.Writer) error {
	if src := data.SourceOf(dataDir, dataset); src != data.SourcePyG {
		if src == data.SourceJSONL {
			return checkShadowed(dataset, dataDir, out)
		}
		return fmt.Errorf("the fetched files are not where the readers look (%s)", data.PyGDir(dataDir, dataset))
	}
	spec, err := data.OpenSpec(dataDir, dataset)
	if err != nil {
		return err
	}
	var counts []string
	for _, split := range spec.Splits {
		key := prep.Key{Dataset: dataset, Split: split, Encoding: prep.EncRaw, Seed: data.DefaultGenSeed}
		var gs []*data.Graph
		if cacheDir == "" {
			gs, _, err = data.LoadSplit(dataDir, dataset, split)
		} else {
			var st prep.Status
			gs, st, err = prep.LoadDataset(cacheDir, dataDir, key, 0)
			if err == nil {
				fmt.Fprintln(out, st.Describe())
			}
		}
		if err != nil {
			return fmt.Errorf("%s split: %w", split, err)
		}
		counts = append(counts, fmt.Sprintf("%s %d", split, len(gs)))
	}
	fmt.Fprintf(out, "%s: read %s graphs (%s)\n", dataset, strings.Join(counts, ", "), data.DescribeSource(dataDir, dataset))
	return nil
}

// checkShadowed reads every split of a fetched distribution that runs do not read, because the
// data folder's JSON Lines files of the dataset come first (Peptides-func): the files are
// checked, their graphs not cached.
func checkShadowed(dataset, dataDir string, out io.Writer) error {
	spec, err := data.OpenSpec(dataDir, dataset)
	if err != nil {
		return err
	}
	var counts []string
	for _, split := range spec.Splits {
		gs, _, err := data.LoadPublicSplit(dataDir, dataset, split)
		if err != nil {
			return fmt.Errorf("%s split: %w", split, err)
		}
		counts = append(counts, fmt.Sprintf("%s %d", split, len(gs)))
	}
	fmt.Fprintf(out, "%s: read %s graphs from the public distribution in %s (not cached: runs read %s)\n",
		dataset, strings.Join(counts, ", "), data.PyGDir(dataDir, dataset), data.DescribeSource(dataDir, dataset))
	return nil
}
