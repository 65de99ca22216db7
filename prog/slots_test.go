package prog

import (
	"math/rand/v2"
	"testing"
)

// TestAssignSlotsHandCase: a chain a → b → c of equal sizes needs two slots (c takes a's, freed
// after b read it; b cannot take a's, which b's step reads); a value of another class or size
// never shares.
func TestAssignSlotsHandCase(t *testing.T) {
	lives := []Life{
		{Size: 10, Def: 0, Last: 1}, // a, read by b's step
		{Size: 10, Def: 1, Last: 2}, // b, read by c's step
		{Size: 10, Def: 2, Last: 4}, // c, an output
		{Size: 10, Class: 1, Def: 3, Last: 3},
		{Size: 5, Def: 3, Last: 3},
	}
	l, err := AssignSlots(lives, 4)
	if err != nil {
		t.Fatal(err)
	}
	want := []int{0, 1, 0, 2, 3}
	for i, s := range want {
		if l.Of[i] != s {
			t.Fatalf("slots %v, want %v", l.Of, want)
		}
	}
	if l.Total() != 35 || Peak(lives, 4) != 25 {
		t.Fatalf("total %d, peak %d; want 35 and 25", l.Total(), Peak(lives, 4))
	}
	if _, err := AssignSlots([]Life{{Size: 1, Def: 2, Last: 1}}, 4); err == nil {
		t.Fatal("a value read before it is written was accepted")
	}
}

// TestAssignSlotsNeverOverlap: on random lifetimes, no two values live at one step share a slot
// (checked by brute force), and the layout is at least the peak of the live sizes.
func TestAssignSlotsNeverOverlap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 200; trial++ {
		steps := 1 + rng.IntN(30)
		lives := make([]Life, rng.IntN(40))
		for i := range lives {
			def := rng.IntN(steps)
			lives[i] = Life{Size: int64(1 + rng.IntN(3)), Class: rng.IntN(2), Def: def, Last: def + rng.IntN(steps+1-def)}
		}
		l, err := AssignSlots(lives, steps)
		if err != nil {
			t.Fatal(err)
		}
		for i, a := range lives {
			s := l.Slots[l.Of[i]]
			if s.Size != a.Size || s.Class != a.Class {
				t.Fatalf("value %v in slot %v", a, s)
			}
			for j, b := range lives[:i] {
				if l.Of[i] == l.Of[j] && a.Def <= b.Last && b.Def <= a.Last {
					t.Fatalf("trial %d: values %d %v and %d %v overlap in slot %d", trial, i, a, j, b, l.Of[i])
				}
			}
		}
		if l.Total() < Peak(lives, steps) {
			t.Fatalf("layout %d below the peak %d", l.Total(), Peak(lives, steps))
		}
	}
}

// TestAssignSlotsInPlace: a value may take over the slot of an input it is allowed to overwrite
// only at that input's last reader, with its size and class.
func TestAssignSlotsInPlace(t *testing.T) {
	lives := []Life{
		{Size: 8, Def: 0, Last: 1},                     // a
		{Size: 8, Def: 1, Last: 3, Reuse: []int{0}},    // b = f(a) in place: a dies at 1
		{Size: 8, Def: 2, Last: 3, Reuse: []int{1}},    // c may overwrite b, but b is read at 3
		{Size: 4, Def: 3, Last: 4, Reuse: []int{2}},    // d: another size
		{Size: 8, Def: 3, Last: 4, Reuse: []int{1, 2}}, // e takes b's slot (b dies at 3)
	}
	l, err := AssignSlots(lives, 4)
	if err != nil {
		t.Fatal(err)
	}
	if l.Of[1] != l.Of[0] || l.Took[1] != 0 || l.Of[2] == l.Of[1] || l.Took[2] != -1 || l.Took[3] != -1 || l.Of[4] != l.Of[1] || l.Took[4] != 1 {
		t.Fatalf("slots %v, took %v", l.Of, l.Took)
	}
}
