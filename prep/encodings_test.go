package prep

import (
	"fmt"
	"testing"

	"github.com/rewiregnn/rewiregnn/data"
)

// TestNodeEncodersMatchRegistry: every node encoding of data's registry has its computation
// here, and every computation here belongs to a node encoding of the registry, so a new one
// cannot be declared in one place and forgotten in the other.
func TestNodeEncodersMatchRegistry(t *testing.T) {
	for _, name := range data.EncodingNames() {
		e, _ := data.LookupEncoding(name)
		if _, ok := nodeEncoders[name]; ok != (e.Input == data.NodeVector) {
			t.Errorf("encoding %s (input kind %d): computation registered here %v", name, e.Input, ok)
		}
	}
	for name := range nodeEncoders {
		if e, ok := data.LookupEncoding(name); !ok || e.Input != data.NodeVector {
			t.Errorf("node encoder %q: not a node encoding of data's registry", name)
		}
	}
}

// TestKeyWidths: the key holds the width setting its encoding reads and no other, so that a
// setting the encoding ignores never splits its cache, and names it in the file name.
func TestKeyWidths(t *testing.T) {
	for _, c := range []struct {
		enc, want string
	}{{"lp", "q8"}, {"rwse", "k16"}, {"adj", "q0"}, {"short", "q0"}, {"none", "q0"}} {
		k := Key{Dataset: "zinc", Split: "train", R: 2, Encoding: c.enc}.WithWidths(8, 16)
		want := fmt.Sprintf("zinc/train/r2/%s/clsfalse/%s/selfloopsfalse/seed0/v%d", c.enc, c.want, PreprocessVersion)
		if k.String() != want || k.Validate() != nil {
			t.Errorf("%s: key %s (%v), want %s", c.enc, k, k.Validate(), want)
		}
	}
	for _, enc := range []string{"lp", "rwse"} {
		if err := (Key{Dataset: "zinc", Split: "train", R: 2, Encoding: enc}).Validate(); err == nil {
			t.Errorf("%s without a width accepted", enc)
		}
	}
}
