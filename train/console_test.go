package train

import (
	"bytes"
	"runtime"
	"strings"
	"testing"
)

// TestConsolePlurals: the trainer's lines put a count of one with a singular noun ("1 thread",
// "after 1 epoch"), not "1 threads".
func TestConsolePlurals(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	c := nm2(t, "train.max_epochs=1", "dataset.subset=1")
	var log bytes.Buffer
	if _, err := trainIn(t, c, c.Dir(41), false, false, &log); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"1/0/1 graph,", "1 thread,", "stopped by max_epochs after 1 epoch ("} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("the log lacks %q:\n%s", want, log.String())
		}
	}
	for _, bad := range []string{"1 threads", "1 epochs", "1 graphs"} {
		if strings.Contains(log.String(), bad) {
			t.Errorf("the log says %q:\n%s", bad, log.String())
		}
	}
}
