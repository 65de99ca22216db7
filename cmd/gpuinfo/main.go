// Command gpuinfo prints what the CUDA binding finds on this machine: the driver library and
// the CUDA version it supports, every GPU, the NVRTC and cuBLAS chosen for that driver, and
// the architecture kernels are compiled for; or, for whatever is missing, every place probed.
//
//	go run ./cmd/gpuinfo [-compile] [-arch N]
//
// -compile also compiles and loads every kernel on GPU 0 (filling the kernel cache).
// The exit status is 0 when a usable GPU was found, 1 otherwise.
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/rewiregnn/rewiregnn/cuda"
	"github.com/rewiregnn/rewiregnn/cuda/cudalib"
	"github.com/rewiregnn/rewiregnn/cuda/kernels"
	"github.com/rewiregnn/rewiregnn/gpuopt"
)

func main() {
	compile := flag.Bool("compile", false, "compile and load every kernel on GPU 0")
	arch := flag.Int("arch", 0, "compile the kernels' PTX for this virtual architecture (gpu.arch, e.g. 70: a V100's); 0 the GPU's own")
	flag.Parse()
	if err := gpuopt.CheckArch(*arch); err != nil {
		fmt.Fprintf(os.Stderr, "gpuinfo: -arch: %v\n", err)
		os.Exit(2)
	}
	os.Exit(run(*compile, *arch))
}

func run(compile bool, arch int) int {
	drv, err := cudalib.LoadDriver()
	if err != nil {
		fmt.Println("driver: not found")
		fmt.Println(err)
		// NVRTC alone still compiles kernels (the CI compile gate); report it too.
		if nv, nerr := cudalib.LoadNVRTC(nil); nerr == nil {
			fmt.Printf("NVRTC (no driver, compile only): %v at %s, architectures %v\n", nv.Version, nv.Path, nv.Archs())
			nv.Close()
		} else {
			fmt.Println(nerr)
		}
		return 1
	}
	fmt.Printf("driver: %s, supports CUDA %v, %d GPU(s)\n", drv.Path, drv.Version, drv.Devices)
	status := 0
	var nvrtcReported bool
	for i := 0; i < drv.Devices; i++ {
		o := gpuopt.Default()
		o.Arch = arch
		d, err := cuda.OpenWith(i, o)
		if err != nil {
			fmt.Printf("GPU %d: %v\n", i, err)
			status = 1
			continue
		}
		fmt.Println(d)
		if !nvrtcReported {
			nvrtcReported = true
			if nv, err := cudalib.LoadNVRTC(&d.Driver); err != nil {
				fmt.Println(err)
				status = 1
			} else {
				mode := "PTX, JIT-compiled by the driver"
				if nv.Cubin {
					mode = "device code (NVRTC is newer than the driver)"
				}
				fmt.Printf("NVRTC: %v at %s (%s), architectures %v\n", nv.Version, nv.Path, mode, nv.Archs())
				if nv.Builtins != "" {
					fmt.Printf("NVRTC builtins: %s\n", nv.Builtins)
				}
				if a, err := cuda.KernelArch(nv, d.CC, arch); err != nil {
					fmt.Println(err)
					status = 1
				} else {
					fmt.Printf("kernels for GPU %d: architecture %d\n", i, a)
				}
				nv.Close()
			}
			if b, err := cudalib.LoadCUBLAS(d.Driver); err != nil {
				fmt.Println(err)
				status = 1
			} else {
				fmt.Printf("cuBLAS: %v at %s\n", b.Version, b.Path)
				if b.LtPath != "" {
					fmt.Printf("cuBLASLt: %s\n", b.LtPath)
				}
			}
		}
		if compile && i == 0 {
			t0 := time.Now()
			k, err := d.Kernels()
			if err != nil {
				fmt.Println(err)
				status = 1
			} else {
				fmt.Printf("%v in %.1f s (cache %s)\n", k, time.Since(t0).Seconds(), kernels.DefaultCache().Dir)
			}
		}
		if err := d.Close(); err != nil {
			fmt.Println(err)
			status = 1
		}
	}
	if drv.Devices == 0 {
		status = 1
	}
	return status
}
