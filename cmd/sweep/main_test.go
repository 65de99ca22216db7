package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestUsageErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "-grid is required"},
		{[]string{"-grid", "g.yaml", "-workers", "0"}, "-workers 0"},
		{[]string{"-grid", "g.yaml", "-submit"}, "-submit needs -slurm"},
		{[]string{"-grid", "g.yaml", "x"}, `unexpected argument "x"`},
		{[]string{"-bogus"}, "-bogus"},
	} {
		var so, se bytes.Buffer
		if code := run(context.Background(), c.args, &so, &se); code != 2 || !strings.Contains(se.String(), c.want) {
			t.Errorf("%v: exit %d, %s", c.args, code, se.String())
		}
	}
}

func TestGPUIDs(t *testing.T) {
	t.Setenv("CUDA_VISIBLE_DEVICES", "2,3")
	if ids, err := gpuIDs(""); err != nil || strings.Join(ids, ",") != "2,3" {
		t.Errorf("env: %v %v", ids, err)
	}
	if ids, err := gpuIDs("0, 1"); err != nil || strings.Join(ids, ",") != "0,1" {
		t.Errorf("flag: %v %v", ids, err)
	}
	if ids, err := gpuIDs("none"); err != nil || len(ids) != 0 {
		t.Errorf("none: %v %v", ids, err)
	}
	if _, err := gpuIDs("0;rm"); err == nil || !strings.Contains(err.Error(), "-gpus") {
		t.Errorf("bad id: %v", err)
	}
}
