package tfread

import (
	"errors"
	"fmt"
	"math"
)

// HParams is a decoded HParamsPluginData (tensorboard/plugins/hparams/plugin_data.proto):
// version (1) and one of experiment (2), session_start_info (3), session_end_info (4).
type HParams struct {
	Version int
	Kind    int // 2, 3 or 4: which member is set

	// session_start_info: hparams (1, map<string, google.protobuf.Value>), group_name (4),
	// start_time_secs (5). A value is a float64, a string or a bool.
	HParams map[string]any
	Group   string
	Start   float64

	// session_end_info: status (1), end_time_secs (2).
	Status int
	End    float64

	// experiment: hparam_infos (4: name 1, domain_discrete 5) and metric_infos (5: name 1 →
	// tag 2).
	Domains map[string][]any
	Metrics []string
}

// DecodeHParams decodes the content of an hparams plugin summary.
func DecodeHParams(b []byte) (*HParams, error) {
	fs, err := Fields(b)
	if err != nil {
		return nil, err
	}
	h := &HParams{}
	for _, f := range fs {
		switch {
		case f.Num == 1 && f.Wire == 0:
			h.Version = int(f.Int)
		case f.Num == 3 && f.Wire == 2:
			h.Kind = 3
			err = h.start(f.Bytes)
		case f.Num == 4 && f.Wire == 2:
			h.Kind = 4
			err = h.end(f.Bytes)
		case f.Num == 2 && f.Wire == 2:
			h.Kind = 2
			err = h.experiment(f.Bytes)
		}
		if err != nil {
			return nil, err
		}
	}
	if h.Kind == 0 {
		return nil, errors.New("no experiment, session_start_info or session_end_info")
	}
	return h, nil
}

func (h *HParams) start(b []byte) error {
	fs, err := Fields(b)
	if err != nil {
		return err
	}
	h.HParams = map[string]any{}
	for _, f := range fs {
		switch {
		case f.Num == 1 && f.Wire == 2:
			entry, err := Fields(f.Bytes)
			if err != nil {
				return err
			}
			var key string
			var val any
			for _, e := range entry {
				switch e.Num {
				case 1:
					key = string(e.Bytes)
				case 2:
					if val, err = structValue(e.Bytes); err != nil {
						return err
					}
				}
			}
			h.HParams[key] = val
		case f.Num == 4 && f.Wire == 2:
			h.Group = string(f.Bytes)
		case f.Num == 5 && f.Wire == 1:
			h.Start = math.Float64frombits(f.Int)
		}
	}
	return nil
}

func (h *HParams) end(b []byte) error {
	fs, err := Fields(b)
	if err != nil {
		return err
	}
	for _, f := range fs {
		switch {
		case f.Num == 1 && f.Wire == 0:
			h.Status = int(f.Int)
		case f.Num == 2 && f.Wire == 1:
			h.End = math.Float64frombits(f.Int)
		}
	}
	return nil
}

func (h *HParams) experiment(b []byte) error {
	fs, err := Fields(b)
	if err != nil {
		return err
	}
	h.Domains = map[string][]any{}
	for _, f := range fs {
		switch {
		case f.Num == 4 && f.Wire == 2:
			info, err := Fields(f.Bytes)
			if err != nil {
				return err
			}
			var name string
			var dom []any
			for _, x := range info {
				switch {
				case x.Num == 1:
					name = string(x.Bytes)
				case x.Num == 5:
					list, err := Fields(x.Bytes)
					if err != nil {
						return err
					}
					for _, v := range list {
						val, err := structValue(v.Bytes)
						if err != nil {
							return err
						}
						dom = append(dom, val)
					}
				}
			}
			h.Domains[name] = dom
		case f.Num == 5 && f.Wire == 2:
			info, err := Fields(f.Bytes)
			if err != nil {
				return err
			}
			for _, x := range info {
				if x.Num != 1 {
					continue
				}
				mn, err := Fields(x.Bytes)
				if err != nil {
					return err
				}
				for _, y := range mn {
					if y.Num == 2 {
						h.Metrics = append(h.Metrics, string(y.Bytes))
					}
				}
			}
		}
	}
	return nil
}

// structValue decodes a google.protobuf.Value: number_value (2), string_value (3), bool_value (4).
func structValue(b []byte) (any, error) {
	fs, err := Fields(b)
	if err != nil {
		return nil, err
	}
	for _, f := range fs {
		switch {
		case f.Num == 2 && f.Wire == 1:
			return math.Float64frombits(f.Int), nil
		case f.Num == 3 && f.Wire == 2:
			return string(f.Bytes), nil
		case f.Num == 4 && f.Wire == 0:
			return f.Int != 0, nil
		}
	}
	return nil, fmt.Errorf("a google.protobuf.Value of no known kind: % x", b)
}
