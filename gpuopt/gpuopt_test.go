package gpuopt

import (
	"reflect"
	"strings"
	"testing"
)

// TestParseFolds: all, none and lists of folds read back as they are written; an unknown or
// repeated fold is an error naming it.
func TestParseFolds(t *testing.T) {
	for _, c := range []struct {
		in, out, off string
	}{
		{"all", "all", ""}, {"none", "none", "scatter,bndx,gate"}, {"gate", "gate", "scatter,bndx"},
		{" gate , scatter", "scatter,gate", "bndx"}, {"scatter,bndx,gate", "all", ""},
	} {
		f, err := ParseFolds(c.in)
		if err != nil {
			t.Fatalf("%q: %v", c.in, err)
		}
		if f.String() != c.out || f.Off() != c.off {
			t.Errorf("%q: %s (off %q), want %s (off %q)", c.in, f, f.Off(), c.out, c.off)
		}
		if back, err := ParseFolds(f.String()); err != nil || back != f {
			t.Errorf("%q: %s reads back as %v, %v", c.in, f, back, err)
		}
	}
	for in, want := range map[string]string{"gates": `"gates" is not a fold`, "gate,gate": "named twice", "": "empty", "0": `"0" is not a fold`} {
		if _, err := ParseFolds(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", in, err, want)
		}
	}
}

// TestParseDefines: definitions are split at commas and trimmed; a name that is no C
// identifier is refused.
func TestParseDefines(t *testing.T) {
	got, err := ParseDefines(" RW_UNROLL=1,,RW_X ")
	if err != nil || !reflect.DeepEqual(got, []string{"RW_UNROLL=1", "RW_X"}) {
		t.Errorf("got %q, %v", got, err)
	}
	for _, bad := range []string{"=1", "1A=2", "A-B=1", "A=1 2"} {
		if _, err := ParseDefines(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestPrecisionRegistry: the registry parses its own names, refuses others with the list, and
// only fp32 trains on the CPU.
func TestPrecisionRegistry(t *testing.T) {
	if got := strings.Join(PrecisionNames(), ","); got != "fp32,tf32,bf16" {
		t.Errorf("names %s", got)
	}
	for _, p := range Precisions {
		info, err := ParsePrecision(string(p.Name))
		if err != nil || info.Name != p.Name || p.Name.Info() != p {
			t.Errorf("%s: %+v, %v", p.Name, info, err)
		}
		if p.CPU != (p.Name == FP32) {
			t.Errorf("%s: CPU %t", p.Name, p.CPU)
		}
	}
	if _, err := ParsePrecision("fp16"); err == nil || !strings.Contains(err.Error(), "fp32, tf32, bf16") {
		t.Errorf("fp16: %v", err)
	}
}

// TestDefaultPairs: the defaults as config keys write.
func TestDefaultPairs(t *testing.T) {
	want := "edge_folds=all, batched_products=true, cuda_graphs=true, narrow_gradw=false, kernel_defines=, arch=0"
	if got := Default().String(); got != want {
		t.Errorf("Default() = %s, want %s", got, want)
	}
}
