// Package gpuwindow holds the test of scripts/gpu-window.sh (one GPU window prepared here and run
// there in one device call: gpu-check, gpu-speed, the ZINC rows and whole run, the campaign): it
// builds a window with a parked run and runs it on the emulated GPU. No code.
package gpuwindow
