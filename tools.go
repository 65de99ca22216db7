//go:build tools

// Package tools pins modules that later stages of the pipeline use (models on Gorgonia,
// YAML configs with viper) so that their versions are fixed in go.mod from the start.
package tools

import (
	_ "github.com/spf13/viper"
	_ "gorgonia.org/gorgonia"
	_ "gorgonia.org/tensor"
)
