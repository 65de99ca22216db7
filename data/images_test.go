package data_test

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rewiregnn/rewiregnn/data"
)

func writeFile(t *testing.T, path string, b []byte, gz bool) {
	t.Helper()
	if gz {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		zw.Write(b)
		zw.Close()
		b = buf.Bytes()
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func idxImages(magic uint32, count, rows, cols int) []byte {
	b := make([]byte, 16+count*rows*cols)
	binary.BigEndian.PutUint32(b, magic)
	binary.BigEndian.PutUint32(b[4:], uint32(count))
	binary.BigEndian.PutUint32(b[8:], uint32(rows))
	binary.BigEndian.PutUint32(b[12:], uint32(cols))
	for i := 16; i < len(b); i++ {
		b[i] = byte(i * 7)
	}
	return b
}

func idxLabels(magic uint32, count int) []byte {
	b := make([]byte, 8+count)
	binary.BigEndian.PutUint32(b, magic)
	binary.BigEndian.PutUint32(b[4:], uint32(count))
	for i := 8; i < len(b); i++ {
		b[i] = byte(i % 10)
	}
	return b
}

func wantErr(t *testing.T, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want one mentioning %q", parts)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q does not mention %q", err, p)
		}
	}
}

func TestIDXReaderErrors(t *testing.T) {
	dir := t.TempDir()
	img := filepath.Join(dir, "img.gz")
	lab := filepath.Join(dir, "lab.gz")
	writeFile(t, img, idxImages(2051, 3, 4, 5), true)
	writeFile(t, lab, idxLabels(2049, 3), true)
	im, err := data.ReadMNIST(img, lab)
	if err != nil {
		t.Fatal(err)
	}
	if im.Count != 3 || im.Rows != 4 || im.Cols != 5 || len(im.Labels) != 3 {
		t.Fatalf("read %+v", im)
	}

	// wrong magic numbers: images and labels swapped
	_, err = data.ReadMNIST(lab, img)
	wantErr(t, err, lab, "magic number 2049", "2051")
	_, err = data.ReadIDXLabels(img, 10)
	wantErr(t, err, img, "magic number 2051", "2049")

	// label file shorter than the image file
	short := filepath.Join(dir, "short.gz")
	writeFile(t, short, idxLabels(2049, 2), true)
	_, err = data.ReadMNIST(img, short)
	wantErr(t, err, short, "2 labels", "3 images")

	// label count in the header disagrees with the data
	bad := idxLabels(2049, 3)
	writeFile(t, short, bad[:len(bad)-1], true)
	_, err = data.ReadIDXLabels(short, 10)
	wantErr(t, err, short, "truncated")

	// truncated image data inside a valid gzip stream
	raw := idxImages(2051, 3, 4, 5)
	writeFile(t, img, raw[:len(raw)-7], true)
	_, err = data.ReadIDXImages(img)
	wantErr(t, err, img, "truncated")

	// truncated gzip stream
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(raw)
	zw.Close()
	cut := filepath.Join(dir, "cut.gz")
	writeFile(t, cut, buf.Bytes()[:buf.Len()/2], false)
	_, err = data.ReadIDXImages(cut)
	wantErr(t, err, cut, "truncated")
	writeFile(t, cut, buf.Bytes()[:5], false)
	_, err = data.ReadIDXImages(cut)
	wantErr(t, err, cut, "gzip")

	// not gzip at all
	writeFile(t, cut, raw, false)
	_, err = data.ReadIDXImages(cut)
	wantErr(t, err, cut, "not a gzip file")

	// missing file
	_, err = data.ReadIDXImages(filepath.Join(dir, "nope.gz"))
	wantErr(t, err, "nope.gz")
}

func cifarRecords(n int) []byte {
	var b []byte
	for i := 0; i < n; i++ {
		rec := make([]byte, data.CIFARRecord)
		rec[0] = byte(i % 10)
		for p := 1; p < data.CIFARRecord; p++ {
			// red left half, blue right half
			ch, pos := (p-1)/1024, (p-1)%1024
			if (ch == 0 && pos%32 < 16) || (ch == 2 && pos%32 >= 16) {
				rec[p] = 200
			}
		}
		b = append(b, rec...)
	}
	return b
}

func TestCIFAR10Reader(t *testing.T) {
	dir := t.TempDir()
	p1, p2 := filepath.Join(dir, "a.bin"), filepath.Join(dir, "b.bin")
	writeFile(t, p1, cifarRecords(3), false)
	writeFile(t, p2, cifarRecords(2), false)
	im, err := data.ReadCIFAR10(p1, p2)
	if err != nil {
		t.Fatal(err)
	}
	if im.Count != 5 || im.Channels != 3 || len(im.Pixels) != 5*3072 || im.Labels[4] != 1 {
		t.Fatalf("read %d images, %d channels, labels %v", im.Count, im.Channels, im.Labels)
	}
	gs, err := data.SuperpixelGraphs(im, data.CIFAR10Superpixels())
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range gs {
		if g.N < 2 || g.N > 150 || g.Node.FloatDim != 5 {
			t.Fatalf("%d nodes, width %d", g.N, g.Node.FloatDim)
		}
		// every superpixel is pure red or pure blue
		for v := 0; v < g.N; v++ {
			r, b := g.Node.Float[5*v], g.Node.Float[5*v+2]
			if (r > 0) == (b > 0) {
				t.Fatalf("superpixel %d mixes the halves: r %g b %g", v, r, b)
			}
		}
	}

	raw := cifarRecords(2)
	writeFile(t, p1, raw[:len(raw)-1], false)
	_, err = data.ReadCIFAR10(p1)
	wantErr(t, err, p1, "whole number")
	raw[data.CIFARRecord] = 12
	writeFile(t, p1, raw, false)
	_, err = data.ReadCIFAR10(p1)
	wantErr(t, err, p1, "label 12")
	_, err = data.LoadCIFAR10Images(dir, "train")
	wantErr(t, err, "data_batch_1.bin", "cifar-10-binary")
}
