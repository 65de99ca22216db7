package config

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/rewiregnn/rewiregnn/runfiles"
)

// BudgetKeys are the keys that set a run's budget rather than its model: a value other than the
// configured protocol's (the built-in defaults plus the config file or grid) is a departure,
// whatever layer gave it (environment, -set, or the trainer's -subset, -epochs, -max-time and
// -device flags, which become -set overrides).
var BudgetKeys = []string{"dataset.subset", "train.max_epochs", "train.max_time", "device"}

// hashExcluded are the keys Hash leaves out: they do not change the trained model (where files
// go and are cached, the run's name, the seeds: each run records its own seed, activation
// recomputation) or are recorded
// on their own (the device: Result.Device, and a departure when it differs from the config).
var hashExcluded = map[string]bool{
	"out": true, "dataset.dir": true, "dataset.cache": true, "train.seeds": true, "name": true, "device": true,
	"model.recompute": true, // the same results bit for bit, less memory
}

// hashLater are keys added to layoutV1 after the hash's serialisation was fixed, with their
// default: a run at the default hashes as it did before the key existed (so earlier results keep
// their hash), a run that sets it hashes it.
var hashLater = map[string]string{"model.relative": "", "train.stop_accuracy": formatValue(0.0)}

// leftOutAtDefault are keys added since layoutV1 whose default is not their zero value, with
// that default (as formatValue writes it): Hash leaves such a key out while it holds its
// default, so a run at the default hashes as before the key existed, and RunName names it only
// when it differs (nameSuffixes). YAML writes it always (config.yaml holds every key a run
// used); loading a config.yaml written before the key existed gives the default back from
// configs/defaults/base.yaml.
var leftOutAtDefault = map[string]string{KeyPrecision: PrecisionFP32, KeyRWSteps: formatValue(DefaultRWSteps)}

// atLeftOutDefault reports whether key f is one of leftOutAtDefault holding its default.
func (r *Run) atLeftOutDefault(f *field) bool {
	def, ok := leftOutAtDefault[f.key]
	return ok && formatValue(f.get(r)) == def
}

// layoutV1 is every key of the config, in order, as it stood when models got their own keys
// (ModelSpec): the keys Hash serialises for every run (the model keys of the three models of
// that time included, at their zero value for the other models) and config files are written
// with. It is frozen: the hashes and config.yaml files of earlier runs depend on it. A key added
// since (a new model's own key, a new shared key) is not listed: Hash and YAML place it after the
// last listed key of its section, and Hash leaves it out at its zero value.
var layoutV1 = []string{
	"name",
	"dataset.name", "dataset.dir", "dataset.r", "dataset.encoding", "dataset.cls", "dataset.q", "dataset.self_loops",
	"dataset.cache", "dataset.val_fraction", "dataset.subset",
	"model.name", "model.layers", "model.hidden", "model.heads", "model.kernels", "model.pseudo_dim", "model.norm",
	"model.batch_norm", "model.residual", "model.readout", "model.edge_feat", "model.dropout", "model.in_feat_dropout",
	"model.sp_encoder", "model.recompute", "model.relative",
	"train.seeds", "train.batch_size", "train.lr", "train.lr_factor", "train.patience", "train.min_lr", "train.max_epochs",
	"train.max_time", "train.buckets", "train.monitor", "train.stop_accuracy",
	"device", "out",
}

var inLayoutV1 = func() map[string]bool {
	m := map[string]bool{}
	for _, k := range layoutV1 {
		m[k] = true
	}
	return m
}()

// hashVersion starts the serialisation Hash digests; change it if the serialisation changes.
const hashVersion = "rewiregnn config hash v1\n"

// Hash is the SHA-256 (64 hex digits) of a canonical serialisation of the resolved config: a
// version line, then "key=value\n" for every key of layoutV1 in its order (that of the Run struct
// before models had their own keys) except out, dataset.dir, dataset.cache, train.seeds, name
// and device, values written as in a config file (durations as 12h or 90m, floats in shortest
// form), the own keys of models the run does not use at their zero value; keys added to layoutV1
// later (hashLater) only when they differ from their default; then every key added since
// layoutV1 (in schema order) that is not at its zero value nor at its default in
// leftOutAtDefault; the gpu section's keys that change the numbers only away from their
// default (gpuKeyDefaults). Two runs with the same hash train
// the same model under the same budget.
func (r *Run) Hash() string {
	var b strings.Builder
	b.WriteString(hashVersion)
	line := func(f *field) {
		b.WriteString(f.key)
		b.WriteByte('=')
		b.WriteString(formatValue(f.get(r)))
		b.WriteByte('\n')
	}
	for _, k := range layoutV1 {
		f := schemaByKey[k]
		if hashExcluded[k] || f == nil {
			continue
		}
		if def, ok := hashLater[k]; ok && formatValue(f.get(r)) == def {
			continue
		}
		line(f)
	}
	for _, f := range schema {
		if inLayoutV1[f.key] || hashExcluded[f.key] {
			continue
		}
		if _, ok := gpuKeyDefaults[f.key]; ok {
			if !r.gpuNotHashed(f) {
				line(f)
			}
			continue
		}
		if !isZero(f.get(r)) && !r.atLeftOutDefault(f) {
			line(f)
		}
	}
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:])
}

// formatValue writes a value as a config file or a -set gives it (lists comma-separated).
func formatValue(v any) string {
	if xs, ok := v.([]int64); ok {
		parts := make([]string, len(xs))
		for i, x := range xs {
			parts[i] = strconv.FormatInt(x, 10)
		}
		return strings.Join(parts, ",")
	}
	return valueNode(v).Value
}

// budget is where one budget key's value came from: the configured protocol's value and the
// built-in default, typed as the key's field.
type budget struct {
	key              string
	protocol, normal any
}

// provenance is what Load learnt about the budget keys of a run; nil for a Run made otherwise
// (no departures, no reductions).
type provenance struct {
	budgets []budget
}

// budgetProvenance records the protocol value (the top of proto: defaults and config file) and
// the built-in default (the top of defs) of every budget key.
func budgetProvenance(defs, proto stack) *provenance {
	p := &provenance{}
	for _, k := range BudgetKeys {
		pv, _ := proto.top(k)
		dv, _ := defs.top(k)
		p.budgets = append(p.budgets, budget{key: k, protocol: pv.val, normal: dv.val})
	}
	return p
}

// Departures are the budget keys whose value differs from the configured protocol's, in
// BudgetKeys order.
func (r *Run) Departures() []runfiles.Departure {
	var out []runfiles.Departure
	for _, d := range r.Budget() {
		if d.Protocol != d.Used {
			out = append(out, d)
		}
	}
	return out
}

// Budget is every budget key with its configured protocol's value and the value used, in
// BudgetKeys order, departed or not (nil for a Run that Load did not make): what a resumed
// session gives runfiles.RunDepartures, so that a key back at the value of the config.yaml it
// loaded is known to be so even where the session that put it back recorded no epoch.
func (r *Run) Budget() []runfiles.Departure {
	if r.prov == nil {
		return nil
	}
	var out []runfiles.Departure
	for _, b := range r.prov.budgets {
		out = append(out, runfiles.Departure{Key: b.key, Protocol: formatValue(b.protocol), Used: formatValue(schemaByKey[b.key].get(r))})
	}
	return out
}

// Reductions are the budget keys the config file (or grid) sets below the built-in default:
// a smaller dataset.subset (0 keeps every graph), fewer train.max_epochs, a shorter
// train.max_time. The device is never a reduction.
func (r *Run) Reductions() []runfiles.Reduction {
	if r.prov == nil {
		return nil
	}
	var out []runfiles.Reduction
	for _, b := range r.prov.budgets {
		if below(b.protocol, b.normal) {
			out = append(out, runfiles.Reduction{Key: b.key, Default: formatValue(b.normal), Configured: formatValue(b.protocol)})
		}
	}
	return out
}

// below reports whether a budget value is smaller than the default; 0 means "no limit" for a
// subset.
func below(v, def any) bool {
	switch x := v.(type) {
	case int:
		d, _ := def.(int)
		return x > 0 && (d == 0 || x < d)
	case time.Duration:
		d, _ := def.(time.Duration)
		return x > 0 && (d == 0 || x < d)
	}
	return false
}

// Protocol is a copy of the run with every departed budget key back at its configured
// protocol's value: what sweep writes as the trainer's config file, the departures passed
// beside it as DepartureSets, so that the trainer records them again.
func (r *Run) Protocol() *Run {
	c := *r
	if r.prov == nil {
		return &c
	}
	for _, b := range r.prov.budgets {
		if b.protocol == nil {
			continue
		}
		reflect.ValueOf(&c).Elem().FieldByIndex(schemaByKey[b.key].index).Set(reflect.ValueOf(b.protocol))
	}
	return &c
}

// DepartureSets are the departures as -set key=value overrides.
func (r *Run) DepartureSets() []string {
	var out []string
	for _, d := range r.Departures() {
		out = append(out, d.Key+"="+d.Used)
	}
	return out
}

// Diff names the keys Hash covers in which the run differs from want, each as
// "key value (want other)", in schema order: why two hashes differ.
func (r *Run) Diff(want *Run) []string {
	var out []string
	for _, k := range r.DiffKeys(want) {
		f := schemaByKey[k]
		out = append(out, fmt.Sprintf("%s %s (want %s)", k, formatValue(f.get(r)), formatValue(f.get(want))))
	}
	return out
}

// DiffKeys are the keys Hash covers in which the run differs from want, in schema order.
func (r *Run) DiffKeys(want *Run) []string {
	var out []string
	for _, f := range schema {
		if hashExcluded[f.key] {
			continue
		}
		if formatValue(f.get(r)) != formatValue(f.get(want)) {
			out = append(out, f.key)
		}
	}
	return out
}
