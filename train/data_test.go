package train

import (
	"io"
	"reflect"
	"testing"
	"time"
)

// TestCachedDataMatchesUncached checks that a generated dataset is the same with and without
// the preprocessing cache: both draw it with the generated datasets' seed.
func TestCachedDataMatchesUncached(t *testing.T) {
	loadTrain := func(sets ...string) *run {
		c := nm2(t, sets...)
		r := &run{o: Options{Run: c, Seed: 1, Dir: c.Dir(1), Workers: 1}, cfg: c, start: time.Now(), log: io.Discard}
		if err := r.loadData(); err != nil {
			t.Fatal(err)
		}
		return r
	}
	plain := loadTrain("dataset.cache=off")
	cached := loadTrain("dataset.cache=" + t.TempDir())
	for _, s := range []struct {
		name string
		a, b any
	}{{"train", plain.train, cached.train}, {"val", plain.val, cached.val}, {"test", plain.test, cached.test}} {
		if !reflect.DeepEqual(s.a, s.b) {
			t.Errorf("%s split differs between the cached and the uncached load", s.name)
		}
	}
}
