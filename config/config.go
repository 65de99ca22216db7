// Package config holds the experiment configuration of one training run (the YAML files under
// configs/), its loading with defaults and overrides, its validation, and the expansion of grid
// configs into runs.
package config

import (
	"time"

	"github.com/rewiregnn/rewiregnn/gpuopt"
)

// Run is one fully resolved training run. YAML keys are the mapstructure tags.
type Run struct {
	Name    string  `mapstructure:"name" yaml:"name"` // stable run name, e.g. zinc-gatedgcn-adj-cls-r4
	Dataset Dataset `mapstructure:"dataset" yaml:"dataset"`
	Model   Model   `mapstructure:"model" yaml:"model"`
	Train   Train   `mapstructure:"train" yaml:"train"`
	GPU     GPU     `mapstructure:"gpu" yaml:"gpu"`       // the GPU path's switches (GPUOptions)
	Device  string  `mapstructure:"device" yaml:"device"` // cpu | cuda | emu | auto
	Out     string  `mapstructure:"out" yaml:"out"`       // root folder of run directories

	prov *provenance // the budget keys' protocol values, set by Load (provenance.go)
}

// Dataset selects the data (docs/protocol.md §"Datasets") and its preprocessing (§"Rewiring" to
// §"Laplacian encoding").
type Dataset struct {
	Name      string `mapstructure:"name" yaml:"name"`             // data registry name (zinc, aqsol, cluster, pattern, mnist, cifar10, neighborsmatch-N, erdosrenyi, peptides-func, peptides-struct)
	Dir       string `mapstructure:"dir" yaml:"dir"`               // data folder; "" → $REWIREGNN_DATA, then ../shared/data
	R         int    `mapstructure:"r" yaml:"r"`                   // rewiring radius, ≥ 1; RAuto (written auto) until the density rule resolves it
	Encoding  string `mapstructure:"encoding" yaml:"encoding"`     // an encoding of data's registry: none | adj | short | lp | rwse
	CLS       bool   `mapstructure:"cls" yaml:"cls"`               // add the CLS node
	Q         int    `mapstructure:"q" yaml:"q"`                   // Laplacian width for lp (dataset default, docs/protocol.md §"Laplacian encoding")
	RWSteps   int    `mapstructure:"rw_steps" yaml:"rw_steps"`     // walk lengths 1..k of rwse (default 16, docs/protocol.md §"Random-walk encoding")
	SelfLoops bool   `mapstructure:"self_loops" yaml:"self_loops"` // self-loops in the rewired graph (docs/protocol.md §"Rewiring")
	Cache     string `mapstructure:"cache" yaml:"cache"`           // preprocessing cache folder; "auto" (default): <user cache dir>/rewiregnn/prep; "off" (or "") disables it
	// ValFraction carves this fraction of the training split off as validation when the
	// dataset has no validation split (NeighborsMatch); 0 monitors the training loss instead.
	ValFraction float64 `mapstructure:"val_fraction" yaml:"val_fraction"`
	// Subset keeps only the first Subset graphs of each split (quick runs, tests); 0 keeps all.
	Subset int `mapstructure:"subset" yaml:"subset"`
}

// The random-walk encoding's width (docs/protocol.md §"Random-walk encoding"): dataset.rw_steps
// is k, the walks of 1..k steps whose return probabilities each node carries. It is read with
// encoding rwse only (as dataset.q with lp) and checked for every run: never negative, at least
// 1 with rwse, and at most MaxRWSteps (long walks only approach the stationary distribution,
// and each step is a column of every node's encoding).
const (
	KeyRWSteps     = "dataset.rw_steps"
	DefaultRWSteps = 16 // GraphGPS's walks of 1..16 steps; configs/defaults/base.yaml sets it
	MaxRWSteps     = 256
)

// KeyRadius is the rewiring radius's key. Besides a whole number ≥ 1 it takes RadiusAuto: the
// first r whose mean density over the training split exceeds 0.5 (the paper's rule, package
// hops), resolved before the run is named (train.ResolveRadius).
const KeyRadius = "dataset.r"

// RadiusAuto is how a config file, -set or the environment asks for the density rule; RAuto is
// its value in Dataset.R until it is resolved.
const (
	RadiusAuto = "auto"
	RAuto      = -1
)

// Model selects the network and its shape (docs/protocol.md §"GatedGCN", §"MoNet",
// §"Graph Transformer"). The fields are the keys every model shares; a model's own keys (the
// Transformer's heads, MoNet's kernels, …) are in Own, declared by the model's spec
// (ModelSpec, read from configs/defaults/model/<name>.yaml) and read with Int, Float, Bool and
// Str.
type Model struct {
	Name      string `mapstructure:"name" yaml:"name"`     // one of ModelNames
	Layers    int    `mapstructure:"layers" yaml:"layers"` // ≥ 1
	Hidden    int    `mapstructure:"hidden" yaml:"hidden"` // d
	BatchNorm bool   `mapstructure:"batch_norm" yaml:"batch_norm"`
	Residual  bool   `mapstructure:"residual" yaml:"residual"`
	// Readout is the output head's input: mean (graph mean pooling), cls (the CLS node's final
	// feature; needs dataset.cls), node (per-node prediction: CLUSTER, PATTERN) or root (the
	// NeighborsMatch root). "auto" in a config file; Load resolves it from the dataset and
	// dataset.cls (graph tasks: cls when dataset.cls, else mean).
	Readout string `mapstructure:"readout" yaml:"readout"`
	// EdgeFeat feeds the input edge features to the layers (bgnn's edge_feat). GatedGCN and the
	// Transformer always use them; for MoNet it is the paper's edge embedding added to the
	// kernel weights (docs/protocol.md §"MoNet edge embedding"), required with the adj and short
	// encodings.
	EdgeFeat      bool    `mapstructure:"edge_feat" yaml:"edge_feat"`
	Dropout       float64 `mapstructure:"dropout" yaml:"dropout"`                 // in [0, 1)
	InFeatDropout float64 `mapstructure:"in_feat_dropout" yaml:"in_feat_dropout"` // in [0, 1)
	SPEncoder     string  `mapstructure:"sp_encoder" yaml:"sp_encoder"`           // table | linear (docs/protocol.md §"Input layer and encoders")
	// Recompute trains with activation recomputation (docs/memory.md): the forward pass keeps
	// only each layer's outputs and the backward pass recomputes the rest, for the same results
	// bit for bit and a fraction of the activation memory, at the cost of a second forward pass.
	Recompute bool `mapstructure:"recompute" yaml:"recompute"`
	// Own holds the model's own keys by name (without "model."), typed as its spec says. Load
	// gives every own key of the model; a key missing here reads as its zero value. Among them
	// (docs/protocol.md): the Transformer's heads (d divisible by heads), norm (pre_bn | post_bn
	// | pre_ln | post_ln) and relative ("" | learned | sinusoid, §"Relative-position
	// Transformer"); MoNet's kernels (K) and pseudo_dim.
	Own map[string]any `mapstructure:",remain" yaml:"-"`
}

// Int is the model's own key name as an int (0 when the model has no such key).
func (m Model) Int(name string) int { v, _ := m.Own[name].(int); return v }

// Float is the model's own key name as a float (0 when the model has no such key).
func (m Model) Float(name string) float64 { v, _ := m.Own[name].(float64); return v }

// Bool is the model's own key name as a bool (false when the model has no such key).
func (m Model) Bool(name string) bool { v, _ := m.Own[name].(bool); return v }

// Str is the model's own key name as a string ("" when the model has no such key).
func (m Model) Str(name string) string { v, _ := m.Own[name].(string); return v }

// Train is the optimisation protocol (docs/protocol.md §"Training protocol").
type Train struct {
	Seeds     []int64       `mapstructure:"seeds" yaml:"seeds"` // one run per seed; default 41, 95, 12, 35
	BatchSize int           `mapstructure:"batch_size" yaml:"batch_size"`
	LR        float64       `mapstructure:"lr" yaml:"lr"`               // initial learning rate (1e-3)
	LRFactor  float64       `mapstructure:"lr_factor" yaml:"lr_factor"` // plateau factor (0.5)
	Patience  int           `mapstructure:"patience" yaml:"patience"`
	MinLR     float64       `mapstructure:"min_lr" yaml:"min_lr"` // stop when lr < min_lr (1e-6)
	MaxEpochs int           `mapstructure:"max_epochs" yaml:"max_epochs"`
	MaxTime   time.Duration `mapstructure:"max_time" yaml:"max_time"` // wall-clock cap ("12h")
	Buckets   int           `mapstructure:"buckets" yaml:"buckets"`   // shape buckets per split (≥ 1)
	Monitor   string        `mapstructure:"monitor" yaml:"monitor"`   // val_loss | train_loss: what the LR schedule watches
	// StopAccuracy ends a classification run once an epoch's training accuracy (on the fly, %)
	// reaches it (NeighborsMatch: 100, Alon & Yahav's rule); 0 never.
	StopAccuracy float64 `mapstructure:"stop_accuracy" yaml:"stop_accuracy"`
	// Precision is the GPU's arithmetic and storage: fp32 (the default, the protocol's), tf32
	// (cuBLAS on the TF32 tensor cores: inputs rounded to 10 mantissa bits, float32 sums; the
	// project's own kernels stay float32) or bf16 (GatedGCN's edge sums ê stored in bf16 and
	// read back as float32; float32 arithmetic and products). The CPU computes and stores in
	// float32 only, so the trainer refuses tf32 and bf16 there (docs/gpu.md §"Precision").
	Precision string `mapstructure:"precision" yaml:"precision"`
}

// KeyPrecision is train.precision's key; its values are the registry gpuopt.Precisions.
const (
	KeyPrecision  = "train.precision"
	PrecisionFP32 = string(gpuopt.FP32) // the default
)

// GPU is the gpu section: the GPU path's switches (gpuopt.Options; docs/gpu.md §"Switches"),
// read only by a run on a GPU or the emulated GPU. The defaults (configs/defaults/base.yaml)
// are gpuopt.Default; a key at its default is neither hashed nor written to config.yaml
// (gpuKeyDefaults), so configs and runs from before the section keep their hash and files.
type GPU struct {
	// EdgeFolds are the edge folds of GatedGCN's plan: all, none, or the folds to make,
	// comma-separated (scatter, bndx, gate). Changes the sums' order: hashed.
	EdgeFolds string `mapstructure:"edge_folds" yaml:"edge_folds"`
	// BatchedProducts runs a batch of products as one cuBLAS call (false: one each). Hashed.
	BatchedProducts bool `mapstructure:"batched_products" yaml:"batched_products"`
	// CUDAGraphs replays captured CUDA graphs (false: launch by launch). The same launches,
	// the same bits: not hashed.
	CUDAGraphs bool `mapstructure:"cuda_graphs" yaml:"cuda_graphs"`
	// NarrowGradW runs narrow products' weight gradients on the project's kernels. Hashed.
	NarrowGradW bool `mapstructure:"narrow_gradw" yaml:"narrow_gradw"`
	// KernelDefines are NAME=VALUE definitions for every kernel, comma-separated. Hashed.
	KernelDefines string `mapstructure:"kernel_defines" yaml:"kernel_defines"`
	// Arch is the kernels' virtual architecture (0: the GPU's own): a machine choice, for
	// checking on a newer GPU the code an older one runs; not hashed (the same arithmetic).
	Arch int `mapstructure:"arch" yaml:"arch"`
}

// The gpu section's keys.
const (
	KeyEdgeFolds       = "gpu.edge_folds"
	KeyBatchedProducts = "gpu.batched_products"
	KeyCUDAGraphs      = "gpu.cuda_graphs"
	KeyNarrowGradW     = "gpu.narrow_gradw"
	KeyKernelDefines   = "gpu.kernel_defines"
	KeyArch            = "gpu.arch"
)

// PaperSeeds are the four seeds of docs/protocol.md §"Seeds" (benchmarking-gnns' seeds; the
// paper names none).
var PaperSeeds = []int64{41, 95, 12, 35}
