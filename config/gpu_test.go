package config

import (
	"reflect"
	"strings"
	"testing"

	"github.com/rewiregnn/rewiregnn/gpuopt"
)

// TestGPUKeysRejected: an impossible value of each gpu key (from a file, -set or the
// environment) is an error naming the key and where it came from.
func TestGPUKeysRejected(t *testing.T) {
	cases := []struct {
		name, file string
		sets       []string
		env        map[string]string
		want       []string
	}{
		{"folds unknown", "dataset: {name: zinc}\ngpu: {edge_folds: gates}\n", nil, nil, []string{"x.yaml:2:", "gpu.edge_folds:", `"gates" is not a fold`, "scatter, bndx, gate"}},
		{"folds twice", "dataset: {name: zinc}\n", []string{"gpu.edge_folds=gate,gate"}, nil, []string{"-set gpu.edge_folds=gate,gate", "gpu.edge_folds:", "named twice"}},
		{"folds empty", "dataset: {name: zinc}\n", []string{"gpu.edge_folds="}, nil, []string{"gpu.edge_folds:", "empty"}},
		{"batched not bool", "dataset: {name: zinc}\n", []string{"gpu.batched_products=maybe"}, nil, []string{"gpu.batched_products:"}},
		{"graphs not bool", "dataset: {name: zinc}\ngpu: {cuda_graphs: 2}\n", nil, nil, []string{"gpu.cuda_graphs:"}},
		{"narrow not bool", "dataset: {name: zinc}\n", nil, map[string]string{"REWIREGNN_GPU_NARROW_GRADW": "yes please"}, []string{"$REWIREGNN_GPU_NARROW_GRADW", "gpu.narrow_gradw:"}},
		{"defines bad name", "dataset: {name: zinc}\n", []string{"gpu.kernel_defines=1RW=2"}, nil, []string{"gpu.kernel_defines:", `"1RW=2"`, "C identifier"}},
		{"defines quote", "dataset: {name: zinc}\ngpu: {kernel_defines: 'RW_X=\"a\"'}\n", nil, nil, []string{"gpu.kernel_defines:", "no spaces or quotes"}},
		{"arch low", "dataset: {name: zinc}\n", []string{"gpu.arch=7"}, nil, []string{"-set gpu.arch=7", "gpu.arch:", "compute_70"}},
		{"arch text", "dataset: {name: zinc}\n", []string{"gpu.arch=sm70"}, nil, []string{"gpu.arch:", "not an integer"}},
		{"typo", "dataset: {name: zinc}\n", []string{"gpu.edge_fold=none"}, nil, []string{`unknown key "gpu.edge_fold"`, `did you mean "gpu.edge_folds"`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			_, err := Load(writeTemp(t, "x.yaml", c.file), c.sets)
			if err == nil {
				t.Fatalf("accepted, want an error containing %q", c.want)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\ndoes not contain %q", err, w)
				}
			}
		})
	}
}

// TestGPUOptionsDefaults: configs/defaults/base.yaml's gpu section is gpuopt.Default, and
// every gpu key has its entry in gpuKeyDefaults.
func TestGPUOptionsDefaults(t *testing.T) {
	r := mustLoad(t, writeTemp(t, "c.yaml", zincFile))
	o, err := r.GPUOptions()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(o, gpuopt.Default()) {
		t.Errorf("defaults: %+v, want %+v", o, gpuopt.Default())
	}
	keys := sectionKeys("gpu")
	if len(keys) != len(gpuKeyDefaults) {
		t.Errorf("gpu keys %v, gpuKeyDefaults has %d", keys, len(gpuKeyDefaults))
	}
	for _, k := range keys {
		if _, ok := gpuKeyDefaults[k]; !ok {
			t.Errorf("%s has no entry in gpuKeyDefaults", k)
		} else if !r.atGPUDefault(schemaByKey[k]) {
			t.Errorf("%s = %v is not its gpuKeyDefaults default", k, schemaByKey[k].get(r))
		}
	}
}

// TestGPUOptionsParsed: the gpu keys and train.precision reach GPUOptions typed.
func TestGPUOptionsParsed(t *testing.T) {
	r := mustLoad(t, writeTemp(t, "c.yaml", zincFile), "gpu.edge_folds=scatter,gate", "gpu.batched_products=false",
		"gpu.cuda_graphs=false", "gpu.narrow_gradw=true", "gpu.kernel_defines=RW_UNROLL=1, RW_X", "gpu.arch=70", "train.precision=bf16")
	o, err := r.GPUOptions()
	if err != nil {
		t.Fatal(err)
	}
	want := gpuopt.Options{Precision: gpuopt.BF16, EdgeFolds: gpuopt.Folds{Scatter: true, Gate: true}, NarrowGradW: true,
		KernelDefines: []string{"RW_UNROLL=1", "RW_X"}, Arch: 70}
	if !reflect.DeepEqual(o, want) {
		t.Errorf("options %+v, want %+v", o, want)
	}
	r.GPU.EdgeFolds = "sideways"
	if _, err := r.GPUOptions(); err == nil || !strings.Contains(err.Error(), KeyEdgeFolds) {
		t.Errorf("GPUOptions with edge_folds sideways: %v, want an error naming %s", err, KeyEdgeFolds)
	}
}

// TestGPUKeysHash: at their defaults the gpu keys leave the hash and config.yaml as they were
// before the section existed; a key that changes the numbers changes the hash away from its
// default, cuda_graphs and arch (the same bits) do not; config.yaml writes a key away from its
// default, and loading it gives the same run back.
func TestGPUKeysHash(t *testing.T) {
	file := writeTemp(t, "c.yaml", zincFile)
	base := mustLoad(t, file)
	y, err := base.YAML()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(y), "gpu") {
		t.Errorf("config.yaml at the defaults writes the gpu section:\n%s", y)
	}
	explicit := mustLoad(t, file, "gpu.edge_folds=scatter,bndx,gate", "gpu.batched_products=true", "gpu.kernel_defines=")
	if explicit.Hash() != base.Hash() {
		t.Errorf("the defaults given explicitly change the hash")
	}
	if explicit.RunName() != base.RunName() {
		t.Errorf("the defaults given explicitly change the run name to %s", explicit.RunName())
	}
	for _, c := range []struct {
		set     string
		changes bool
		suffix  string // the run name's, after base's name
	}{
		{"gpu.edge_folds=none", true, "-folds-none"}, {"gpu.edge_folds=gate", true, "-folds-gate"},
		{"gpu.edge_folds=scatter,bndx", true, "-folds-scatter+bndx"}, {"gpu.batched_products=false", true, "-unbatched"},
		{"gpu.narrow_gradw=true", true, "-narrowgw"}, {"gpu.kernel_defines=RW_UNROLL=1", true, "-kd"},
		{"gpu.cuda_graphs=false", false, ""}, {"gpu.arch=70", false, ""},
	} {
		r := mustLoad(t, file, c.set)
		if got := r.Hash() != base.Hash(); got != c.changes {
			t.Errorf("%s: hash changed %t, want %t", c.set, got, c.changes)
		}
		if name := r.RunName(); !strings.HasPrefix(name, base.RunName()+c.suffix) || (c.suffix != "-kd" && name != base.RunName()+c.suffix) || (c.suffix == "-kd" && len(name) != len(base.RunName())+len("-kd")+6) {
			t.Errorf("%s: run name %s, want %s%s", c.set, name, base.RunName(), c.suffix)
		}
		y, err := r.YAML()
		if err != nil {
			t.Fatal(err)
		}
		key, val, _ := strings.Cut(strings.TrimPrefix(c.set, "gpu."), "=")
		if !strings.Contains(string(y), "gpu:\n  "+key+": ") || !strings.Contains(string(y), val) {
			t.Errorf("%s: config.yaml lacks it:\n%s", c.set, y)
		}
		back := mustLoad(t, writeTemp(t, "back.yaml", string(y)))
		if back.GPU != r.GPU || back.Hash() != r.Hash() {
			t.Errorf("%s: config.yaml read back gives %+v, hash %s; want %+v, %s", c.set, back.GPU, back.Hash(), r.GPU, r.Hash())
		}
	}
}
