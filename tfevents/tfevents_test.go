package tfevents

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rewiregnn/rewiregnn/internal/tfread"
)

// TestMaskedCRC: the masked CRC-32C of "123456789", derived by hand from the CRC's published
// check value 0xE3069283: rotated right by 15 bits, 0xE3069283>>15 = 0x0001C60D and
// (0xE3069283<<17) mod 2³² = 0x25060000, or'ed 0x2507C60D; plus 0xa282ead8 = 0xC78AB0E5. Other
// inputs are compared with tfread's bit-by-bit CRC.
func TestMaskedCRC(t *testing.T) {
	if got := MaskedCRC([]byte("123456789")); got != 0xC78AB0E5 {
		t.Fatalf("masked CRC of 123456789: %#08x, want 0xc78ab0e5", got)
	}
	for _, s := range []string{"", "a", "brain.Event:2", strings.Repeat("\xff\x00", 100)} {
		if got, want := MaskedCRC([]byte(s)), tfread.Masked([]byte(s)); got != want {
			t.Errorf("%q: %#08x, want %#08x", s, got, want)
		}
	}
}

// TestScalarEventBytes: one scalar event byte for byte, derived by hand from the wire format:
//
//	09 00 00 00 00 00 00 f8 3f   wall_time (field 1, fixed64): 1.5 = 0x3FF8000000000000
//	10 03                        step (field 2, varint): 3
//	2a 0a                        summary (field 5, 10 bytes)
//	   0a 08                     value (field 1, 8 bytes)
//	      0a 01 61               tag (field 1): "a"
//	      15 00 00 00 3f         simple_value (field 2, fixed32): 0.5 = 0x3F000000
//
// and its record: length 23 as 8 bytes little-endian, that length's masked CRC, the 23 bytes,
// their masked CRC.
func TestScalarEventBytes(t *testing.T) {
	want := []byte{0x09, 0, 0, 0, 0, 0, 0, 0xf8, 0x3f, 0x10, 0x03, 0x2a, 0x0a, 0x0a, 0x08, 0x0a, 0x01, 'a', 0x15, 0, 0, 0, 0x3f}
	got := ScalarEvent(1.5, 3, []Scalar{{"a", 0.5}})
	if !bytes.Equal(got, want) {
		t.Fatalf("event:\n% x\nwant\n% x", got, want)
	}
	rec := AppendRecord(nil, got)
	length := []byte{23, 0, 0, 0, 0, 0, 0, 0}
	wantRec := append(append([]byte{}, length...), le32(tfread.Masked(length))...)
	wantRec = append(append(wantRec, want...), le32(tfread.Masked(want))...)
	if !bytes.Equal(rec, wantRec) {
		t.Fatalf("record:\n% x\nwant\n% x", rec, wantRec)
	}
	// the version event: wall_time 2.0 (0x4000000000000000), file_version (field 3) "brain.Event:2"
	wantV := append([]byte{0x09, 0, 0, 0, 0, 0, 0, 0, 0x40, 0x1a, 13}, "brain.Event:2"...)
	if got := VersionEvent(2); !bytes.Equal(got, wantV) {
		t.Fatalf("version event:\n% x\nwant\n% x", got, wantV)
	}
}

func le32(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }

// TestWriterReadBack: a file written by Writer reads back through tfread (which shares no code
// with it) as the version event and the scalars, values as float32, steps as written; a step 0
// and a value 0 survive proto3's default omission.
func TestWriterReadBack(t *testing.T) {
	dir := t.TempDir()
	now := time.Unix(1700000000, 250e6)
	w, err := Create(dir, now, "host/a b")
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		step int64
		vals []Scalar
	}{
		{0, []Scalar{{"train/loss", 0}, {"lr", 1e-3}}},
		{1, []Scalar{{"train/loss", 0.25}, {"lr", math.Pi}}},
		{300, []Scalar{{"val/mae", -2.5e-7}}},
	}
	for _, s := range steps {
		if err := w.Write(ScalarEvent(Wall(now), s.step, s.vals)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "events.out.tfevents.1700000000.host_a_b"); w.Path() != want {
		t.Fatalf("file %s, want %s", w.Path(), want)
	}
	evs, err := tfread.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 4 || evs[0].Wall != 1700000000.25 {
		t.Fatalf("%d events, first at %v", len(evs), evs[0].Wall)
	}
	var want []tfread.Scalar
	for _, s := range steps {
		for _, v := range s.vals {
			want = append(want, tfread.Scalar{Tag: v.Tag, Step: s.step, Value: float32(v.Value)})
		}
	}
	got := tfread.Scalars(evs)
	if len(got) != len(want) {
		t.Fatalf("scalars %v, want %v", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("scalar %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	// a second file started in the same second gets a suffix
	w2, err := Create(dir, now, "host/a b")
	if err != nil {
		t.Fatal(err)
	}
	w2.Close()
	if !strings.HasSuffix(w2.Path(), ".host_a_b.2") {
		t.Fatalf("second file %s", w2.Path())
	}
}

// TestTornTail: a file cut inside its last record reads, by tfread and by Records, up to the
// record before; a flipped data byte fails that record's CRC.
func TestTornTail(t *testing.T) {
	var b []byte
	b = AppendRecord(b, VersionEvent(1))
	b = AppendRecord(b, ScalarEvent(2, 1, []Scalar{{"x", 1}}))
	whole := len(b)
	b = AppendRecord(b, ScalarEvent(3, 2, []Scalar{{"x", 2}}))
	for cut := whole + 1; cut < len(b); cut += 3 {
		evs, err := tfread.Parse(b[:cut])
		if !errors.Is(err, tfread.ErrTorn) || len(evs) != 2 || evs[1].Step != 1 {
			t.Fatalf("tfread, cut at %d: %d events, %v", cut, len(evs), err)
		}
		recs, end, err := Records(b[:cut])
		if !errors.Is(err, ErrTorn) || len(recs) != 2 || end != whole {
			t.Fatalf("Records, cut at %d: %d records ending at %d, %v", cut, len(recs), end, err)
		}
	}
	bad := bytes.Clone(b)
	bad[len(bad)-6] ^= 1
	if recs, end, err := Records(bad); err == nil || len(recs) != 2 || end != whole || !strings.Contains(err.Error(), "data's CRC") {
		t.Fatalf("flipped byte: %d records, %v", len(recs), err)
	}
	if _, err := tfread.Parse(bad); err == nil {
		t.Fatal("tfread reads a flipped byte")
	}
}

// TestDecode: Decode reads back step, wall time, version and tags of what the writer encodes,
// checked against tfread's decoding of the same bytes.
func TestDecode(t *testing.T) {
	for _, ev := range [][]byte{
		VersionEvent(12.5),
		ScalarEvent(99.25, 0, []Scalar{{"a", 1}, {"b/c", 2}}),
		ScalarEvent(1, 1<<40, nil),
		SessionEndEvent(5, StatusSuccess, 6),
	} {
		in, err := Decode(ev)
		if err != nil {
			t.Fatal(err)
		}
		ref, err := tfread.Parse(AppendRecord(nil, ev))
		if err != nil || len(ref) != 1 {
			t.Fatal(err)
		}
		var tags []string
		for _, v := range ref[0].Values {
			tags = append(tags, v.Tag)
		}
		if in.Step != ref[0].Step || in.Wall != ref[0].Wall || in.FileVersion != ref[0].FileVersion || strings.Join(in.Tags, ",") != strings.Join(tags, ",") {
			t.Errorf("Decode %+v, tfread %+v", in, ref[0])
		}
	}
	if _, err := Decode([]byte{0x2a, 0x05, 0x0a}); err == nil {
		t.Error("a truncated message decodes")
	}
}

// TestHParamsEvents: the hparams summaries decode (tfread) to the plugin name, tags, version 0
// and the values written.
func TestHParamsEvents(t *testing.T) {
	hp := map[string]HValue{"model.name": String("gatedgcn"), "dataset.r": Number(3), "dataset.cls": Bool(false), "train.lr": Number(0.001)}
	evs := [][]byte{
		SessionStartEvent(10, hp, "zinc-a", 7),
		SessionEndEvent(11, StatusFailure, 11),
		ExperimentEvent(12, map[string][]HValue{"dataset.r": {Number(1), Number(2)}, "dataset.cls": {Bool(false), Bool(true)}},
			[]Metric{{Tag: "final/test_mae"}, {Tag: "final/train_mae", Training: true}}),
	}
	var b []byte
	for _, e := range evs {
		b = AppendRecord(b, e)
	}
	got, err := tfread.Parse(b)
	if err != nil || len(got) != 3 {
		t.Fatalf("%d events, %v", len(got), err)
	}
	var hs []*tfread.HParams
	for i, e := range got {
		v := e.Values[0]
		if v.Plugin != "hparams" || v.HasSimple || e.Step != 0 {
			t.Fatalf("event %d: %+v", i, e)
		}
		h, err := tfread.DecodeHParams(v.Content)
		if err != nil || h.Version != 0 {
			t.Fatalf("event %d: %+v, %v", i, h, err)
		}
		hs = append(hs, h)
	}
	if got[0].Values[0].Tag != SessionStartTag || got[1].Values[0].Tag != SessionEndTag || got[2].Values[0].Tag != ExperimentTag {
		t.Fatal("tags")
	}
	s := hs[0]
	if s.Kind != 3 || s.Group != "zinc-a" || s.Start != 7 || len(s.HParams) != 4 || s.HParams["model.name"] != "gatedgcn" ||
		s.HParams["dataset.r"] != 3.0 || s.HParams["dataset.cls"] != false || s.HParams["train.lr"] != 0.001 {
		t.Fatalf("session start %+v", s)
	}
	if e := hs[1]; e.Kind != 4 || e.Status != 2 || e.End != 11 {
		t.Fatalf("session end %+v", e)
	}
	x := hs[2]
	if x.Kind != 2 || len(x.Domains) != 2 || x.Domains["dataset.r"][1] != 2.0 || x.Domains["dataset.cls"][1] != true ||
		strings.Join(x.Metrics, ",") != "final/test_mae,final/train_mae" {
		t.Fatalf("experiment %+v", x)
	}
}

// TestCreateFails: a folder that cannot be made is an error naming it, no panic.
func TestCreateFails(t *testing.T) {
	file := filepath.Join(t.TempDir(), "f")
	os.WriteFile(file, nil, 0o644)
	if _, err := Create(filepath.Join(file, "tb"), time.Now(), "h"); err == nil {
		t.Fatal("Create under a file succeeded")
	}
}
