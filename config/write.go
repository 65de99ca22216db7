package config

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/rewiregnn/rewiregnn/runfiles"
)

// RunName is Name, or when Name is empty the name derived from the setting:
// <dataset>-<model>[+<relative>]-<encoding>[-cls]-r<r>[-rw<k>][-<precision>][<gpu keys>], e.g.
// zinc-gatedgcn-adj-cls-r4, zinc-transformer+learned-short-cls-r2, zinc-gatedgcn-rwse-r1-rw8,
// zinc-gatedgcn-adj-cls-r4-tf32, zinc-gatedgcn-adj-r1-folds-none (gpuNameParts: the gpu keys
// that change the numbers). The keys of nameSuffixes are named only when they are not at
// their default, so that the runs at the defaults keep the names they had before the key
// existed, and a run that sets another value is another run, in its own folder.
func (r *Run) RunName() string {
	if r.Name != "" {
		return r.Name
	}
	name := SettingName(r.Dataset.Name, r.modelLabel(), r.Dataset.Encoding, r.Dataset.CLS, r.Dataset.R)
	for _, s := range nameSuffixes {
		if f := schemaByKey[s.key]; !r.atLeftOutDefault(f) {
			name += "-" + s.prefix + formatValue(f.get(r))
		}
	}
	return name + r.gpuNameSuffix()
}

// nameSuffixes are the keys of leftOutAtDefault (added since layoutV1, with a default other
// than their zero value), in the order RunName appends them, each with the prefix of its value:
// dataset.rw_steps 8 as -rw8, train.precision tf32 as -tf32. Every such key must be here: two
// runs that differ only in one would otherwise share a folder.
var nameSuffixes = []struct{ key, prefix string }{{KeyRWSteps, "rw"}, {KeyPrecision, ""}}

// modelLabel is the model's name in run names and setting files: the model, with "+<value>"
// for each of its own keys marked in_name that is set (transformer+learned: the
// relative-position variant).
func (r *Run) modelLabel() string {
	label := r.Model.Name
	if s := specs[r.Model.Name]; s != nil {
		for _, k := range s.Keys {
			if v := schemaByKey["model."+k.Name].get(r); k.InName && !isZero(v) {
				label += "+" + formatValue(v)
			}
		}
	}
	return label
}

// writes reports whether YAML writes key f for the run: every key but the own keys of other
// models, which are written (at their zero value) only where layoutV1 has them. The keys of
// leftOutAtDefault are written at their default too: config.yaml holds every key the run used;
// the gpu section's keys only away from their default (gpuKeyDefaults).
func (r *Run) writes(f *field) bool {
	if _, ok := gpuKeyDefaults[f.key]; ok {
		return !r.atGPUDefault(f)
	}
	if f.own == "" || inLayoutV1[f.key] {
		return true
	}
	s := specs[r.Model.Name]
	return s != nil && s.Key(f.own) != nil
}

// SettingName is the derived run name of one setting.
func SettingName(dataset, model, encoding string, cls bool, r int) string {
	return dataset + "-" + settingStem(model, encoding, cls, r)
}

// settingStem is <model>-<encoding>[-cls]-r<r>, the file name of a setting under its dataset.
func settingStem(model, encoding string, cls bool, r int) string {
	s := model + "-" + encoding
	if cls {
		s += "-cls"
	}
	if r == RAuto {
		return s + "-r" + RadiusAuto
	}
	return s + "-r" + strconv.Itoa(r)
}

// Dir is the run directory of one seed: <out>/<run name>/seed<seed>.
func (r *Run) Dir(seed int64) string {
	return filepath.Join(r.Out, r.RunName(), "seed"+strconv.FormatInt(seed, 10))
}

// PortableYAML is YAML with the places of this machine left out: out, dataset.dir and
// dataset.cache at their defaults (runs, "", auto; a cache turned off stays off). They do not
// change the trained model (Hash leaves them out), and a file that may travel to another
// machine or into the repository, such as a parked run's checkpoint, must not name them.
func (r *Run) PortableYAML() ([]byte, error) {
	c := *r
	c.Out, c.Dataset.Dir = "runs", ""
	if c.Dataset.Cache != "off" && c.Dataset.Cache != "" {
		c.Dataset.Cache = "auto"
	}
	return c.YAML()
}

// YAML writes the whole config, every key in a fixed order (that of layoutV1, then keys added
// since), durations as 12h / 90m; the own keys of other models are left out, but for those in
// layoutV1 (written at zero, as they always were). Every other key is written, those of
// leftOutAtDefault at their default included. Loading the output gives the same Run back.
func (r *Run) YAML() ([]byte, error) {
	root := &yaml.Node{Kind: yaml.MappingNode}
	sectionNodes := map[string]*yaml.Node{}
	for _, f := range schema {
		if !r.writes(f) {
			continue
		}
		parent := root
		leaf := f.key
		if sec, rest, ok := strings.Cut(f.key, "."); ok {
			parent = sectionNodes[sec]
			if parent == nil {
				parent = &yaml.Node{Kind: yaml.MappingNode}
				sectionNodes[sec] = parent
				root.Content = append(root.Content, scalarNode("!!str", sec), parent)
			}
			leaf = rest
		}
		v := valueNode(f.get(r))
		if f.key == KeyRadius && r.Dataset.R == RAuto {
			v = scalarNode("!!str", RadiusAuto)
		}
		parent.Content = append(parent.Content, scalarNode("!!str", leaf), v)
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(root); err != nil {
		return nil, fmt.Errorf("config: writing YAML: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("config: writing YAML: %w", err)
	}
	return buf.Bytes(), nil
}

func scalarNode(tag, value string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: value}
}

func valueNode(v any) *yaml.Node {
	switch x := v.(type) {
	case string:
		return scalarNode("!!str", x)
	case int:
		return scalarNode("!!int", strconv.Itoa(x))
	case bool:
		return scalarNode("!!bool", strconv.FormatBool(x))
	case float64:
		s := strconv.FormatFloat(x, 'g', -1, 64)
		if !strings.ContainsAny(s, ".eE") {
			s += ".0" // stays a float for YAML readers that look at the type
		}
		return scalarNode("!!float", s)
	case time.Duration:
		return scalarNode("!!str", formatDuration(x))
	case []int64:
		n := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
		for _, s := range x {
			n.Content = append(n.Content, scalarNode("!!int", strconv.FormatInt(s, 10)))
		}
		return n
	}
	panic(fmt.Sprintf("config: no YAML form for %T", v))
}

// WriteFile writes the resolved config to path with runfiles.WriteAtomic: a reader sees the old
// file or the new one, never part of one. The folder is created if needed.
func WriteFile(path string, r *Run) error {
	data, err := r.YAML()
	if err != nil {
		return err
	}
	if err := runfiles.WriteAtomic(path, data, runfiles.FilePerm); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	return nil
}
