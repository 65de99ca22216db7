package models

import (
	"fmt"
	"sort"
	"strings"

	"github.com/rewiregnn/rewiregnn/config"
	"github.com/rewiregnn/rewiregnn/nn"
)

// Constructor builds the network a config's model section describes on a dataset's input layer
// and head (io, with the input dropout already set): its BuildFunc and parameter count. It reads
// the shared keys from the fields of m and the model's own keys (its spec's: config.Spec) with
// m.Int, m.Float, m.Bool and m.Str, and reports a setting that cannot build a network.
type Constructor func(m config.Model, io nn.IO) (nn.BuildFunc, int, error)

// registry holds the registered constructors by model name.
var registry = map[string]Constructor{}

// Register makes the model called name buildable: FromConfig and Build dispatch to newNet for a
// config whose model.name is name. The model's config keys come from its spec, the defaults
// file configs/defaults/model/<name>.yaml (config.Spec), which must exist. Register panics on a
// name without a spec or registered twice: both are mistakes in the program, and the generated
// registered.go (go generate ./models) calls it once per package under models/.
func Register(name string, newNet Constructor) {
	if config.Spec(name) == nil {
		panic(fmt.Sprintf("models: model %q has no configs/defaults/model/%s.yaml (its config keys and defaults)", name, name))
	}
	if _, dup := registry[name]; dup {
		panic(fmt.Sprintf("models: model %q registered twice", name))
	}
	registry[name] = newNet
}

// Names lists the registered models, sorted.
func Names() []string {
	out := make([]string, 0, len(registry))
	for n := range registry {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// orList writes "a, b or c".
func orList(xs []string) string {
	if len(xs) < 2 {
		return strings.Join(xs, "")
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " or " + xs[len(xs)-1]
}
