package pyfile

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// expected is testdata/expected.json: the values scripts/pyfixtures/make.py wrote.
type expectedArray struct {
	DType  string    `json:"dtype"`
	Shape  []int     `json:"shape"`
	Values []float64 `json:"values"`
}

func readExpected(t *testing.T) map[string]map[string]expectedArray {
	t.Helper()
	raw, err := os.ReadFile("testdata/expected.json")
	if err != nil {
		t.Fatal(err)
	}
	var e map[string]map[string]expectedArray
	if err := json.Unmarshal(raw, &e); err != nil {
		t.Fatal(err)
	}
	return e
}

func checkArray(t *testing.T, name string, v any, want expectedArray) {
	t.Helper()
	a, err := AsArray(v)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if a.DType.String() != want.DType || !slices.Equal(a.Shape, want.Shape) || a.Len() != len(want.Values) {
		t.Fatalf("%s: got %s %v with %d values, want %s %v with %d", name, a.DType, a.Shape, a.Len(), want.DType, want.Shape, len(want.Values))
	}
	for i, w := range want.Values {
		var got float64
		if a.IsFloat() {
			got = a.Float[i]
		} else {
			got = float64(a.Int[i])
		}
		if got != w && !(math.Signbit(got) == math.Signbit(w) && got == 0 && w == 0) {
			t.Errorf("%s[%d] = %v, want %v", name, i, got, w)
		}
	}
}

func loadFile(t *testing.T, name string, torch bool) any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if torch {
		v, err = LoadTorch(b)
	} else {
		v, err = Load(b)
	}
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return v
}

// TestNumpyPickles reads numpy arrays of every element type, byte order and memory order, an
// empty array, a scalar and plain Python values, from pickles of protocols 2 and 4.
func TestNumpyPickles(t *testing.T) {
	want := readExpected(t)["numpy"]
	for _, file := range []string{"numpy-p2.pickle", "numpy-p4.pickle"} {
		v := loadFile(t, file, false)
		for key, w := range want {
			f, err := Field(v, key)
			if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			checkArray(t, file+":"+key, f, w)
		}
		tup, _ := Field(v, "tuple")
		items, err := Items(tup)
		if err != nil || len(items) != 6 {
			t.Fatalf("%s: tuple: %v %v", file, items, err)
		}
		checkArray(t, file+":tuple[0]", items[0], expectedArray{"i2", []int{2}, []float64{1, 2}})
		if items[1] != 3 || items[2] != "text" || items[3] != 2.5 || items[4] != nil || items[5] != true {
			t.Errorf("%s: tuple items %v", file, items[1:])
		}
	}
}

// TestTorchTensors reads torch 1.x tensors from a plain pickle (storages as embedded legacy
// torch.save streams) and from torch.save's zip format, strided views included.
func TestTorchTensors(t *testing.T) {
	want := readExpected(t)["torch"]
	for _, c := range []struct {
		file  string
		torch bool
	}{{"tensors.pickle", false}, {"tensors.pt", true}} {
		v := loadFile(t, c.file, c.torch)
		if got := strings.Join(Keys(v), ","); got != "long2d,float,double,byte,view,base" {
			t.Errorf("%s: keys %s", c.file, got)
		}
		for key, w := range want {
			f, err := Field(v, key)
			if err != nil {
				t.Fatalf("%s: %v", c.file, err)
			}
			checkArray(t, c.file+":"+key, f, w)
		}
	}
}

// TestRejects checks that damaged input gives an error naming the problem, before any
// allocation the data does not pay for.
func TestRejects(t *testing.T) {
	good, err := os.ReadFile("testdata/numpy-p2.pickle")
	if err != nil {
		t.Fatal(err)
	}
	huge := []byte{0x80, 4, 0x8e} // BINBYTES8 declaring 2^60 bytes
	huge = binary.LittleEndian.AppendUint64(huge, 1<<60)
	huge = append(huge, '.')
	frame := []byte{0x80, 4, 0x95}
	frame = binary.LittleEndian.AppendUint64(frame, 1<<50)
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"truncated", good[:len(good)/2], "truncated"},
		{"huge bytes", huge, "declares"},
		{"huge frame", frame, "frame"},
		{"unknown opcode", []byte{0x80, 2, 0xff, '.'}, "unknown opcode"},
		{"trailing", append(append([]byte{}, good...), 'N'), "after the STOP"},
		{"foreign class", []byte("cos\nsystem\n(S'true'\ntR."), "unsupported Python global os.system"},
		{"empty", nil, "no STOP"},
	} {
		_, err := Load(c.data)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
	pt, err := os.ReadFile("testdata/tensors.pt")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := LoadTorch(pt[:len(pt)-40]); err == nil {
		t.Error("truncated zip: no error")
	}
	if _, err := LoadTorch(bytes.Repeat([]byte{0x80}, 10)); err == nil {
		t.Error("garbage: no error")
	}
}

// FuzzLoad: no input makes Load or LoadTorch panic (they return errors).
func FuzzLoad(f *testing.F) {
	for _, name := range []string{"numpy-p2.pickle", "numpy-p4.pickle", "tensors.pickle", "tensors.pt"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		Load(b)
		LoadTorch(b)
	})
}
