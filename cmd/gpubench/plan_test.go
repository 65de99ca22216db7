package main

import (
	"fmt"
	"testing"

	"github.com/rewiregnn/rewiregnn/config"
	"github.com/rewiregnn/rewiregnn/data"
	"github.com/rewiregnn/rewiregnn/gpu"
	"github.com/rewiregnn/rewiregnn/gpuopt"
	"github.com/rewiregnn/rewiregnn/internal/memlimit"
	"github.com/rewiregnn/rewiregnn/models"
	"github.com/rewiregnn/rewiregnn/nn"
	"github.com/rewiregnn/rewiregnn/prep"
	"gorgonia.org/tensor"
)

// TestCIFAR10SizedPlan plans the largest training net of the paper's CIFAR10 GatedGCN (adjacency
// encoding, CLS node, batch 128) at r = 3 and 4 on the CIFAR10-sized synthetic superpixel
// graphs (85–150 nodes, 8 nearest neighbours; the real split's files are not here): the
// worst-case bucket holds the 128 largest of 1024 graphs, as a 45,000-graph split's would hold
// 128 graphs of 150 nodes. It reports the activations on the CPU, normal and recomputed, and on
// the GPU (docs/memory.md; in float32 and with ê in bf16, which must need less), and requires
// the recomputed CPU net under 16 GiB at r = 4.
func TestCIFAR10SizedPlan(t *testing.T) {
	if testing.Short() {
		t.Skip("rewires 1024 graphs at r = 3 and 4")
	}
	spec, err := data.OpenSpec("", "cifar10")
	if err != nil {
		t.Fatal(err)
	}
	raw := SyntheticSuperpixels(1024, 1)
	for _, r := range []int{3, 4} {
		cfg, err := config.Load("", []string{"dataset.name=cifar10", "dataset.encoding=adj", "dataset.cls=true", fmt.Sprintf("dataset.r=%d", r)})
		if err != nil {
			t.Fatal(err)
		}
		key := prep.Key{Dataset: "cifar10", Split: "train", R: r, Encoding: "adj", CLS: true, SelfLoops: cfg.Dataset.SelfLoops}
		gs, err := prep.Build(raw, spec, key, 0)
		if err != nil {
			t.Fatal(err)
		}
		buckets, err := nn.MakeBuckets(gs, cfg.Train.BatchSize, cfg.Train.Buckets)
		if err != nil {
			t.Fatal(err)
		}
		b := buckets[len(buckets)-1]
		_, build, _, err := models.FromConfig(cfg, spec)
		if err != nil {
			t.Fatal(err)
		}
		p, err := nn.NewParams(tensor.Float32, 1)
		if err != nil {
			t.Fatal(err)
		}
		var cpu [2]nn.NetMem
		for i, rc := range []bool{false, true} {
			if cpu[i], err = nn.NetBytes(build, p, b, true, rc); err != nil {
				t.Fatal(err)
			}
		}
		n, err := build(p, b, true)
		if err != nil {
			t.Fatal(err)
		}
		pl, err := gpu.Compile(n, p)
		if err != nil {
			t.Fatal(err)
		}
		bf, err := gpu.CompileWith(n, p, gpuopt.Default().WithPrecision(gpuopt.BF16))
		if err != nil {
			t.Fatal(err)
		}
		f := memlimit.Format
		t.Logf("r = %d, bucket %v: CPU net %s (activations %s), recomputed %s (%s); GPU activations %s (ê in bf16: %s), inputs %s",
			r, b, f(cpu[0].Total()), f(cpu[0].Shared), f(cpu[1].Total()), f(cpu[1].Shared), f(pl.Bytes()), f(bf.Bytes()), f(n.In.Bytes()))
		if bf.Bytes() >= pl.Bytes() {
			t.Errorf("r = %d: GPU activations %s with ê in bf16, not fewer than float32's %s", r, f(bf.Bytes()), f(pl.Bytes()))
		}
		if r == 4 && cpu[1].Total() >= 16<<30 {
			t.Errorf("r = 4: the recomputed training net needs %s, not under 16 GiB", f(cpu[1].Total()))
		}
	}
}
