package config

import "strings"

// Sets is the repeatable -set flag of the commands (a flag.Value): the key=value overrides in
// the order given, later ones winning. Load and LoadGrid read them (dotted keys, lists
// comma-separated: train.seeds=41,95) and report a malformed one naming its -set, so a command
// only collects them:
//
//	var sets config.Sets
//	fs.Var(&sets, "set", "override a config key, key=value (repeatable)")
//	…
//	run, err := config.Load(path, sets)
type Sets []string

func (s *Sets) String() string { return strings.Join(*s, " ") }

// Set appends one key=value, as given on the command line.
func (s *Sets) Set(kv string) error {
	*s = append(*s, kv)
	return nil
}

// Add appends key=value: for a command's own flag that stands for a config key (-device for
// device).
func (s *Sets) Add(key, value string) { *s = append(*s, key+"="+value) }
