package cuda

import "testing"

func TestEmuSmoke(t *testing.T) {
	d, err := OpenEmulator(EmuOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	k, _ := d.Kernels()
	t.Log(d, k)
	x, _ := d.Alloc(4 * 6)
	idx, _ := d.Alloc(4 * 3)
	out, _ := d.Alloc(4 * 6)
	must(t, CopyToDevice(d, x, []float32{1, 2, 3, 4, 5, 6}))
	must(t, CopyToDevice(d, idx, []int32{2, -1, 0}))
	must(t, k.Gather(out, x, idx, 0, 3, 3, 2))
	got := make([]float32, 6)
	must(t, CopyFromDevice(d, got, out))
	t.Log(got)
	s, _ := d.Alloc(4)
	must(t, k.MaskedL1(s, x, out, x, 6))
	g := make([]float32, 1)
	must(t, CopyFromDevice(d, g, s))
	t.Log(g)
}
