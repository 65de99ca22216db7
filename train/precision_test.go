package train

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rewiregnn/rewiregnn/config"
	"github.com/rewiregnn/rewiregnn/cuda/cudalib"
	"github.com/rewiregnn/rewiregnn/gpuexec"
	"github.com/rewiregnn/rewiregnn/gpuopt"
	"github.com/rewiregnn/rewiregnn/runfiles"
)

// TestPrecisionOnTheCPUIsRefused: train.precision tf32 or bf16 on device cpu, and on auto
// without a GPU, fails before the run directory is made, naming the key and the device.
func TestPrecisionOnTheCPUIsRefused(t *testing.T) {
	none := &cudalib.ProbeError{Lib: "libcuda", Reason: "no usable NVIDIA driver library", Attempts: []cudalib.Attempt{{Path: "/usr/lib64/libcuda.so.1", Result: "not found"}}}
	withProbe(t, func(gpuopt.Options) (gpuexec.Backend, error) { return nil, none })
	for _, c := range []struct{ device, want string }{
		{"cpu", "(device cpu)"},
		{"auto", "(device auto: no usable GPU"},
	} {
		for _, p := range []string{"tf32", "bf16"} {
			r := nm2(t, "train.max_epochs=1", "device="+c.device, "train.precision="+p)
			_, err := trainRun(t, r, 41, false, nil)
			if err == nil || !strings.Contains(err.Error(), "train.precision "+p+": the run would train on the CPU "+c.want) ||
				!strings.Contains(err.Error(), "computes and stores in float32 only") {
				t.Fatalf("device %s with %s: %v", c.device, p, err)
			}
			if _, err := os.Stat(r.Dir(41)); !os.IsNotExist(err) {
				t.Fatalf("device %s with %s: the run directory was made (%v)", c.device, p, err)
			}
		}
	}
}

// TestPrecisionTF32 trains one epoch of GatedGCN on the emulated GPU in fp32, in tf32 and in
// bf16: tf32 and bf16 are logged (fp32 is not), each run's config.yaml names its precision, their losses differ
// from fp32's but closely, and a run resumed under another precision is refused.
func TestPrecisionTF32(t *testing.T) {
	needEmu(t)
	withProbe(t, emulated)
	sets := []string{"train.max_epochs=1", "train.batch_size=16", "device=cuda"}
	fp32 := nm2(t, sets...)
	tf32 := nm2(t, append(sets, "train.precision=tf32")...)
	bf16 := nm2(t, append(sets, "train.precision=bf16")...)
	notes := map[string]string{string(gpuopt.TF32): "train.precision tf32: matrix products on the TF32 tensor cores",
		string(gpuopt.BF16): "train.precision bf16: GatedGCN's edge sums ê stored in bf16"}
	var results [3]runfiles.Epoch
	for i, r := range []*config.Run{fp32, tf32, bf16} {
		var log bytes.Buffer
		if _, err := Train(context.Background(), Options{Run: r, Seed: 41, Dir: r.Dir(41), Workers: 1, Log: &log}); err != nil {
			t.Fatalf("%s: %v\n%s", r.Train.Precision, err, log.String())
		}
		es, err := runfiles.ReadMetrics(filepath.Join(r.Dir(41), runfiles.MetricsFile))
		if err != nil || len(es) != 1 {
			t.Fatalf("%s: %d epochs, %v", r.Train.Precision, len(es), err)
		}
		results[i] = es[0]
		y, err := os.ReadFile(filepath.Join(r.Dir(41), runfiles.ConfigFile))
		if err != nil {
			t.Fatal(err)
		}
		for p, note := range notes {
			noted := strings.Contains(log.String(), note)
			written := strings.Contains(string(y), "precision: "+p)
			if want := r.Train.Precision == p; noted != want || written != want {
				t.Fatalf("%s: logged %s %t, config.yaml names it %t; log:\n%s\nconfig.yaml:\n%s", r.Train.Precision, p, noted, written, log.String(), y)
			}
		}
	}
	a := results[0]
	for i, p := range []string{"tf32", "bf16"} {
		b := results[1+i]
		t.Logf("train loss %.7f (fp32) / %.7f (%s), val loss %.7f / %.7f", a.TrainLoss, b.TrainLoss, p, a.ValLoss, b.ValLoss)
		if a.TrainLoss == b.TrainLoss && a.ValLoss == b.ValLoss {
			t.Errorf("%s trained exactly as fp32: the precision did not reach the device", p)
		}
		for _, l := range [][2]float64{{a.TrainLoss, b.TrainLoss}, {a.ValLoss, b.ValLoss}} {
			if math.Abs(l[0]-l[1]) > 1e-2*math.Abs(l[0])+1e-4 {
				t.Errorf("losses %v (fp32) and %v (%s) are far apart", l[0], l[1], p)
			}
		}
	}

	// The tf32 run is named apart (…-tf32), and resuming the fp32 run's folder under tf32 is
	// refused: the config differs from its checkpoint's.
	again, err := config.Load("", []string{"dataset.name=neighborsmatch-2", "dataset.encoding=adj", "dataset.r=2",
		"train.max_epochs=2", "train.batch_size=16", "device=cuda", "train.precision=tf32", "out=" + fp32.Out})
	if err != nil {
		t.Fatal(err)
	}
	if again.Dir(41) == fp32.Dir(41) {
		t.Fatalf("the tf32 run has the fp32 run's folder %s", again.Dir(41))
	}
	_, err = Train(context.Background(), Options{Run: again, Seed: 41, Dir: fp32.Dir(41), Resume: true, Workers: 1}) // train -resume DIR -set train.precision=tf32
	if err == nil || !strings.Contains(err.Error(), "train.precision tf32 (want fp32)") {
		t.Fatalf("resuming an fp32 run under tf32: %v", err)
	}
}
