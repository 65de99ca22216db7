package cuda

import (
	"fmt"
	"testing"

	"github.com/rewiregnn/rewiregnn/cuda/emu"
)

// BenchmarkEmuLaunch times one element-wise launch on the emulated GPU (grid-stride kernel,
// n elements: n/256 blocks of 256 threads) in the concurrent and the deterministic schedule.
func BenchmarkEmuLaunch(b *testing.B) {
	for _, det := range []bool{false, true} {
		for _, n := range []int{256, 4096} {
			b.Run(fmt.Sprintf("n%d_deterministic%v", n, det), func(b *testing.B) {
				d, err := OpenEmulator(emu.Options{Deterministic: det})
				if err != nil {
					b.Skip(err)
				}
				defer d.Close()
				k, _ := d.Kernels()
				x, _ := d.Alloc(4 * n)
				y, _ := d.Alloc(4 * n)
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if err := k.Relu(y, x, n); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
