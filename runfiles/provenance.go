package runfiles

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Departure is a budget key (config.BudgetKeys: dataset.subset, train.max_epochs,
// train.max_time, device) whose value in a run differs from the configured protocol: the value
// the built-in defaults and the config file (or grid) give it. Values are written as in a
// config file (0, 1000, 12h, cuda).
type Departure struct {
	Key      string `json:"key"`
	Protocol string `json:"protocol"` // the configured protocol's value
	Used     string `json:"used"`     // the value the run used (environment, -set, a trainer flag)
}

// Reduction is a budget key that the config file (or grid) itself sets below the built-in
// default, the paper's budget: not a departure from the run's configured protocol, but not the
// paper's budget either (a deliberately reduced grid such as zinc-reduced).
type Reduction struct {
	Key        string `json:"key"`
	Default    string `json:"default"`    // the built-in default
	Configured string `json:"configured"` // the config file's value
}

// Provenance says how a result relates to the paper's protocol, for the readers that choose
// results (sweep, tables).
type Provenance int

const (
	// Protocol: the configured protocol at the paper's budget (a config hash, no departures, no
	// reductions).
	Protocol Provenance = iota
	// Reduced: a reduced budget, by a departure or a reduced config; comparable only when
	// marked as such.
	Reduced
	// Unknown: a result written before runs recorded their config hash.
	Unknown
)

// DeviceKey is the budget key of the device. A device departure is recorded but reduces no
// budget: the model and its budget are the same on any device (the hash leaves the device out).
const DeviceKey = "device"

// BudgetDepartures are the departures other than the device's: those that change the budget.
func BudgetDepartures(ds []Departure) []Departure {
	var out []Departure
	for _, d := range ds {
		if d.Key != DeviceKey {
			out = append(out, d)
		}
	}
	return out
}

// EmulatedDevice starts the recorded device (Result.Device) of a run on the emulated GPU
// (cuda/emu: train -device emu): the
// description cuda.Device.String gives it ("emulated GPU (the real kernels on CPU threads; …").
const EmulatedDevice = "emulated GPU"

// Emulated reports whether the run trained on the emulated GPU.
func (r *Result) Emulated() bool { return strings.HasPrefix(r.Device, EmulatedDevice) }

// emulatedNote is BudgetNote's part for a run on the emulated GPU.
const emulatedNote = "device: the emulated GPU (the CUDA kernels on CPU threads, a check of the GPU path; its timings are no GPU's)"

// Provenance classifies the result: Unknown without a config hash, Reduced on the emulated GPU
// (whatever its budget: a check of the GPU path, whose seconds per epoch are the emulator's),
// with budget departures that bound (any but the device's, and a different wall-clock cap only
// where it could have acted: Binds) or with reductions, else Protocol.
func (r *Result) Provenance() Provenance {
	switch {
	case r.ConfigHash == "":
		return Unknown
	case len(r.Reductions) > 0, r.Emulated():
		return Reduced
	}
	for _, d := range BudgetDepartures(r.Departures) {
		if r.Binds(d) {
			return Reduced
		}
	}
	return Protocol
}

// MaxTimeKey is the budget key of the wall-clock cap.
const MaxTimeKey = "train.max_time"

// Binds reports whether a departure could have changed the result. Every departure does but a
// different wall-clock cap (train.max_time) on a run that stopped by min_lr or max_epochs before
// reaching either cap, the one it used and the protocol's: the cap is only checked after each
// epoch and never acted on, so the run is the protocol's epoch for epoch (a CPU run given a
// 60-minute cap that converged in 15 minutes, say).
func (r *Result) Binds(d Departure) bool {
	if d.Key != MaxTimeKey || (r.StoppedBy != StopMinLR && r.StoppedBy != StopMaxEpochs) {
		return true
	}
	p, err1 := time.ParseDuration(d.Protocol)
	u, err2 := time.ParseDuration(d.Used)
	if err1 != nil || err2 != nil || p <= 0 || u <= 0 {
		return true
	}
	return r.TotalSeconds >= min(p, u).Seconds()
}

// BudgetNote describes the result's departures and reductions (and the emulated GPU) in one
// line, e.g.
// "dataset.subset 1000 (protocol 0); train.max_time 10m in the config (default 12h)", or
// "unknown provenance (no config_hash)"; "" for a protocol run.
func (r *Result) BudgetNote() string {
	if r.ConfigHash == "" {
		return "unknown provenance (no config_hash: written before runs recorded it)"
	}
	var parts []string
	if r.Emulated() {
		parts = append(parts, emulatedNote)
	}
	for _, d := range BudgetDepartures(r.Departures) {
		parts = append(parts, fmt.Sprintf("%s %s (protocol %s)", d.Key, d.Used, d.Protocol))
	}
	for _, d := range r.Reductions {
		parts = append(parts, fmt.Sprintf("%s %s in the config (default %s)", d.Key, d.Configured, d.Default))
	}
	return strings.Join(parts, "; ")
}

// checkProvenance verifies the provenance fields of a result or an epoch.
func checkProvenance(hash string, deps []Departure) error {
	if hash != "" && !isHexHash(hash) {
		return fmt.Errorf(`key "config_hash" is %q, want 64 lower-case hex digits`, hash)
	}
	if hash == "" && len(deps) > 0 {
		return errors.New(`key "departures" is given without "config_hash"`)
	}
	for i, d := range deps {
		if d.Key == "" {
			return fmt.Errorf(`key "departures": item %d has no key`, i)
		}
		if d.Protocol == d.Used {
			return fmt.Errorf(`key "departures": %s: protocol and used are both %q, so it is no departure`, d.Key, d.Used)
		}
	}
	return nil
}

func checkReductions(rs []Reduction) error {
	for i, d := range rs {
		if d.Key == "" {
			return fmt.Errorf(`key "reductions": item %d has no key`, i)
		}
		if d.Default == d.Configured {
			return fmt.Errorf(`key "reductions": %s: default and configured are both %q`, d.Key, d.Default)
		}
	}
	return nil
}

func isHexHash(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// RunDepartures are a run's departures over all its sessions: the epochs already recorded (a
// resumed run's earlier sessions) and now, the current session's budget keys measured from the
// config it loaded (on resume, the run directory's config.yaml, which holds the values of the
// session before). now may list every budget key, departed or not (config.Run.Budget): an entry
// whose Protocol equals its Used says the key is now at the loaded config's value. That matters
// where the session before rewrote config.yaml and was stopped before it recorded an epoch.
// Each key keeps the protocol value of its first record and takes the value used now (now's,
// else the latest epoch's: an epoch with a config hash lists every departure in force, so a key
// it lacks was back at its protocol value); a key back at its protocol value is no departure.
// Keys come in order of first record.
func RunDepartures(earlier []Epoch, now []Departure) []Departure {
	var keys []string
	proto, used := map[string]string{}, map[string]string{}
	note := func(d Departure) {
		if _, ok := proto[d.Key]; !ok {
			keys = append(keys, d.Key)
			proto[d.Key] = d.Protocol
		}
		used[d.Key] = d.Used
	}
	for _, ep := range earlier {
		if ep.ConfigHash != "" {
			// An epoch records the run's whole list: a key it lacks was back at its protocol value.
			for _, k := range keys {
				used[k] = proto[k]
			}
		}
		for _, d := range ep.Departures {
			note(d)
		}
	}
	for _, d := range now {
		note(d)
	}
	var out []Departure
	for _, k := range keys {
		if proto[k] != used[k] {
			out = append(out, Departure{Key: k, Protocol: proto[k], Used: used[k]})
		}
	}
	return out
}

// WithoutKeys are the reductions whose key is not among the departures' (a departed key is
// already marked; on resume the departed value sits in the config the run loaded and would
// otherwise look configured).
func WithoutKeys(rs []Reduction, deps []Departure) []Reduction {
	var out []Reduction
	for _, r := range rs {
		departed := false
		for _, d := range deps {
			departed = departed || d.Key == r.Key
		}
		if !departed {
			out = append(out, r)
		}
	}
	return out
}
