package data

import (
	"bufio"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Images is a set of equally sized 8-bit images with their class labels. Pixels are stored
// image by image, row-major, channel-planar (all of channel 0, then channel 1, …), as in both
// the MNIST idx and the CIFAR-10 binary formats.
type Images struct {
	Count, Rows, Cols, Channels int
	Pixels                      []byte
	Labels                      []byte
}

// Image returns the pixels of image i.
func (im *Images) Image(i int) []byte {
	sz := im.Rows * im.Cols * im.Channels
	return im.Pixels[i*sz : (i+1)*sz]
}

// Slice returns images [from, to) sharing the storage.
func (im *Images) Slice(from, to int) *Images {
	sz := im.Rows * im.Cols * im.Channels
	out := *im
	out.Count = to - from
	out.Pixels = im.Pixels[from*sz : to*sz]
	out.Labels = im.Labels[from:to]
	return &out
}

// MNIST idx magic numbers.
const (
	idxImagesMagic = 2051
	idxLabelsMagic = 2049
)

// readGzip returns the whole decompressed content of a gzip file; a truncated or corrupt stream
// is an error naming the file.
func readGzip(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(bufio.NewReaderSize(f, 1<<16))
	if err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("%s: truncated gzip file (no complete header): %w", path, err)
		}
		return nil, fmt.Errorf("%s: not a gzip file: %w", path, err)
	}
	defer zr.Close()
	raw, err := io.ReadAll(zr)
	if err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, gzip.ErrChecksum) {
			return nil, fmt.Errorf("%s: truncated or corrupt gzip data after %d bytes: %w", path, len(raw), err)
		}
		return nil, fmt.Errorf("%s: reading gzip data: %w", path, err)
	}
	return raw, nil
}

// readMaybeGzip reads a file, decompressing it if its name ends in .gz.
func readMaybeGzip(path string) ([]byte, error) {
	if strings.HasSuffix(path, ".gz") {
		return readGzip(path)
	}
	return os.ReadFile(path)
}

// ReadIDXImages reads an MNIST idx3 image file (gzip-compressed if the name ends in .gz).
func ReadIDXImages(path string) (*Images, error) {
	raw, err := readMaybeGzip(path)
	if err != nil {
		return nil, err
	}
	if len(raw) >= 4 {
		if m := binary.BigEndian.Uint32(raw); m != idxImagesMagic {
			return nil, fmt.Errorf("%s: magic number %d, want %d (idx image file); is this a label file?", path, m, idxImagesMagic)
		}
	}
	if len(raw) < 16 {
		return nil, fmt.Errorf("%s: %d bytes, too short for an idx image header (16 bytes)", path, len(raw))
	}
	count := int(binary.BigEndian.Uint32(raw[4:]))
	rows := int(binary.BigEndian.Uint32(raw[8:]))
	cols := int(binary.BigEndian.Uint32(raw[12:]))
	if rows < 1 || cols < 1 || rows > 1<<12 || cols > 1<<12 {
		return nil, fmt.Errorf("%s: implausible image size %d×%d", path, rows, cols)
	}
	if want := 16 + count*rows*cols; len(raw) != want {
		return nil, fmt.Errorf("%s: %d bytes, want %d for %d images of %d×%d (file truncated or padded)", path, len(raw), want, count, rows, cols)
	}
	return &Images{Count: count, Rows: rows, Cols: cols, Channels: 1, Pixels: raw[16:]}, nil
}

// ReadIDXLabels reads an MNIST idx1 label file (gzip-compressed if the name ends in .gz).
// Labels must lie in 0..classes-1.
func ReadIDXLabels(path string, classes int) ([]byte, error) {
	raw, err := readMaybeGzip(path)
	if err != nil {
		return nil, err
	}
	if len(raw) >= 4 {
		if m := binary.BigEndian.Uint32(raw); m != idxLabelsMagic {
			return nil, fmt.Errorf("%s: magic number %d, want %d (idx label file); is this an image file?", path, m, idxLabelsMagic)
		}
	}
	if len(raw) < 8 {
		return nil, fmt.Errorf("%s: %d bytes, too short for an idx label header (8 bytes)", path, len(raw))
	}
	count := int(binary.BigEndian.Uint32(raw[4:]))
	if len(raw) != 8+count {
		return nil, fmt.Errorf("%s: %d labels stored, header says %d (file truncated or padded)", path, len(raw)-8, count)
	}
	for i, l := range raw[8:] {
		if int(l) >= classes {
			return nil, fmt.Errorf("%s: label %d of image %d outside 0..%d", path, l, i, classes-1)
		}
	}
	return raw[8:], nil
}

// ReadMNIST reads an MNIST image file and its label file and checks that they agree.
func ReadMNIST(imagesPath, labelsPath string) (*Images, error) {
	im, err := ReadIDXImages(imagesPath)
	if err != nil {
		return nil, err
	}
	labels, err := ReadIDXLabels(labelsPath, 10)
	if err != nil {
		return nil, err
	}
	if len(labels) != im.Count {
		return nil, fmt.Errorf("%s has %d labels but %s has %d images", labelsPath, len(labels), imagesPath, im.Count)
	}
	im.Labels = labels
	return im, nil
}

// MNIST file names inside the mnist/ folder of the data folder.
var mnistFiles = map[string][2]string{
	"train": {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"},
	"test":  {"t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"},
}

// LoadMNISTImages returns the images of one split: "val" is the first 5000 training images,
// "train" the other 55000, "test" the 10000 test images (benchmarking-gnns).
func LoadMNISTImages(dir, split string) (*Images, error) {
	return loadTrainValTest(split, 5000, "mnist", func(part string) (*Images, error) {
		f := mnistFiles[part]
		return ReadMNIST(filepath.Join(dir, "mnist", f[0]), filepath.Join(dir, "mnist", f[1]))
	})
}

func loadTrainValTest(split string, nVal int, name string, read func(part string) (*Images, error)) (*Images, error) {
	switch split {
	case "train", "val":
		im, err := read("train")
		if err != nil {
			return nil, err
		}
		if im.Count <= nVal {
			return nil, fmt.Errorf("%s: %d training images, need more than the %d validation images", name, im.Count, nVal)
		}
		if split == "val" {
			return im.Slice(0, nVal), nil
		}
		return im.Slice(nVal, im.Count), nil
	case "test":
		return read("test")
	}
	return nil, fmt.Errorf("%s: unknown split %q (have train, val, test)", name, split)
}

// CIFAR-10 binary format: each record is one label byte and 3072 pixel bytes (1024 red, 1024
// green, 1024 blue, each 32×32 row-major).
const (
	cifarSide   = 32
	cifarRecord = 1 + 3*cifarSide*cifarSide
)

// CIFAR10Files names the files of the "CIFAR-10 binary version" (cifar-10-binary.tar.gz from
// https://www.cs.toronto.edu/~kriz/cifar.html, unpacked): they are looked for in the cifar10/
// folder of the data folder.
var CIFAR10Files = map[string][]string{
	"train": {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin", "data_batch_5.bin"},
	"test":  {"test_batch.bin"},
}

// ReadCIFAR10 reads one or more CIFAR-10 binary batch files and concatenates them.
func ReadCIFAR10(paths ...string) (*Images, error) {
	im := &Images{Rows: cifarSide, Cols: cifarSide, Channels: 3}
	for _, path := range paths {
		raw, err := readMaybeGzip(path)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil, fmt.Errorf("CIFAR-10 file %s not found: download the binary version (cifar-10-binary.tar.gz) from https://www.cs.toronto.edu/~kriz/cifar.html and unpack its .bin files into %s", path, filepath.Dir(path))
			}
			return nil, err
		}
		if len(raw) == 0 || len(raw)%cifarRecord != 0 {
			return nil, fmt.Errorf("%s: %d bytes is not a whole number of %d-byte CIFAR-10 records (truncated file?)", path, len(raw), cifarRecord)
		}
		for off := 0; off < len(raw); off += cifarRecord {
			if l := raw[off]; l > 9 {
				return nil, fmt.Errorf("%s: record %d has label %d outside 0..9", path, off/cifarRecord, l)
			}
			im.Labels = append(im.Labels, raw[off])
			im.Pixels = append(im.Pixels, raw[off+1:off+cifarRecord]...)
			im.Count++
		}
	}
	return im, nil
}

// LoadCIFAR10Images returns one split of CIFAR-10 from dir/cifar10: "val" is the first 5000
// training images, "train" the other 45000, "test" the 10000 test images.
func LoadCIFAR10Images(dir, split string) (*Images, error) {
	return loadTrainValTest(split, 5000, "cifar10", func(part string) (*Images, error) {
		var paths []string
		for _, f := range CIFAR10Files[part] {
			paths = append(paths, filepath.Join(dir, "cifar10", f))
		}
		return ReadCIFAR10(paths...)
	})
}
