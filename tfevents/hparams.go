package tfevents

import "sort"

// The hparams plugin's summaries, from TensorBoard's tensorboard/plugins/hparams/plugin_data.proto
// and api.proto (google.protobuf.Value and ListValue from struct.proto):
//
//	message HParamsPluginData {
//	  int32 version = 1;  // 0
//	  oneof data { Experiment experiment = 2; SessionStartInfo session_start_info = 3;
//	               SessionEndInfo session_end_info = 4; }
//	}
//	message SessionStartInfo { map<string, google.protobuf.Value> hparams = 1;
//	  string group_name = 4; double start_time_secs = 5; … }
//	message SessionEndInfo { Status status = 1; double end_time_secs = 2; }
//	message Experiment { double time_created_secs = 3; repeated HParamInfo hparam_infos = 4;
//	  repeated MetricInfo metric_infos = 5; … }
//	message HParamInfo { string name = 1; DataType type = 4;
//	  oneof domain { google.protobuf.ListValue domain_discrete = 5; … } … }
//	message MetricInfo { MetricName name = 1; DatasetType dataset_type = 5; … }
//	message MetricName { string group = 1; string tag = 2; }
//	message google.protobuf.Value { oneof kind { double number_value = 2;
//	  string string_value = 3; bool bool_value = 4; … } }
//	message google.protobuf.ListValue { repeated Value values = 1; }
//
// A map field is a repeated entry message { key = 1; value = 2 }. Each summary is one Value
// with the tag below, plugin_data.plugin_name "hparams" and the serialized HParamsPluginData
// as plugin_data.content (TensorBoard supplies the empty tensor such a Value lacks when it
// loads it).
const (
	HParamsPlugin    = "hparams"
	HParamsTagPrefix = "_hparams_/" // starts the tags below
	ExperimentTag    = "_hparams_/experiment"
	SessionStartTag  = "_hparams_/session_start_info"
	SessionEndTag    = "_hparams_/session_end_info"
	hpExperiment     = 2
	hpSessionStart   = 3
	hpSessionEnd     = 4
	startHParams     = 1
	startGroupName   = 4
	startTimeSecs    = 5
	endStatus        = 1
	endTimeSecs      = 2
	expTimeCreated   = 3
	expHParamInfos   = 4
	expMetricInfos   = 5
	infoName         = 1
	infoType         = 4
	infoDomain       = 5
	metricInfoName   = 1
	metricInfoData   = 5
	metricNameGroup  = 1
	metricNameTag    = 2
	mapKey           = 1
	mapValue         = 2
	valueNumber      = 2
	valueString      = 3
	valueBool        = 4
	listValues       = 1
	dataTypeString   = 1
	dataTypeBool     = 2
	dataTypeFloat64  = 3
	datasetTraining  = 1
	datasetValidate  = 2
	hparamsVersion   = 0
	hparamsVersionNo = 1
)

// Status is a session's api.proto Status.
type Status int

const (
	StatusUnknown Status = 0
	StatusSuccess Status = 1
	StatusFailure Status = 2
	StatusRunning Status = 3
)

// HValue is a hyperparameter's value: a string, a number or a bool.
type HValue struct {
	kind int // valueNumber, valueString or valueBool
	s    string
	n    float64
	b    bool
}

func String(s string) HValue  { return HValue{kind: valueString, s: s} }
func Number(x float64) HValue { return HValue{kind: valueNumber, n: x} }
func Bool(b bool) HValue      { return HValue{kind: valueBool, b: b} }

// encode is the value as a google.protobuf.Value.
func (v HValue) encode() []byte {
	switch v.kind {
	case valueString:
		return appendBytes(nil, valueString, []byte(v.s))
	case valueBool:
		x := uint64(0)
		if v.b {
			x = 1
		}
		return appendOneofVarint(nil, valueBool, x)
	}
	return appendOneofDouble(nil, valueNumber, v.n)
}

func (v HValue) dataType() uint64 {
	switch v.kind {
	case valueString:
		return dataTypeString
	case valueBool:
		return dataTypeBool
	}
	return dataTypeFloat64
}

// pluginData wraps one member of HParamsPluginData's oneof (version 0 is the default: omitted).
func pluginData(field int, msg []byte) []byte {
	return appendBytes(appendVarint(nil, hparamsVersionNo, hparamsVersion), field, msg)
}

// SessionStartEvent is the serialized event of a session's hparams (sorted by name), its group
// (sessions of one group are seeds of one setting; "" makes the session its own group) and its
// start time.
func SessionStartEvent(wall float64, hparams map[string]HValue, group string, start float64) []byte {
	var msg []byte
	for _, k := range sortedKeys(hparams) {
		entry := appendString(nil, mapKey, k)
		entry = appendBytes(entry, mapValue, hparams[k].encode())
		msg = appendBytes(msg, startHParams, entry)
	}
	msg = appendString(msg, startGroupName, group)
	msg = appendDouble(msg, startTimeSecs, start)
	return PluginEvent(wall, 0, SessionStartTag, HParamsPlugin, pluginData(hpSessionStart, msg))
}

// SessionEndEvent is the serialized event of a session's end: its status and end time.
func SessionEndEvent(wall float64, status Status, end float64) []byte {
	msg := appendVarint(nil, endStatus, uint64(status))
	msg = appendDouble(msg, endTimeSecs, end)
	return PluginEvent(wall, 0, SessionEndTag, HParamsPlugin, pluginData(hpSessionEnd, msg))
}

// Metric is a metric of an experiment: the tag of its scalar summaries and whether it is measured
// on the training split (else on a held-out one).
type Metric struct {
	Tag      string
	Training bool
}

// ExperimentEvent is the serialized event of an experiment summary: its hparams with the
// values each takes (the domain, sorted names; every value of one hparam of one kind) and its
// metrics, each a scalar tag of the sessions' own runs (group "").
func ExperimentEvent(wall float64, domains map[string][]HValue, metrics []Metric) []byte {
	msg := appendDouble(nil, expTimeCreated, wall)
	for _, name := range sortedKeys(domains) {
		vals := domains[name]
		info := appendString(nil, infoName, name)
		if len(vals) > 0 {
			info = appendVarint(info, infoType, vals[0].dataType())
		}
		var list []byte
		for _, v := range vals {
			list = appendBytes(list, listValues, v.encode())
		}
		info = appendBytes(info, infoDomain, list)
		msg = appendBytes(msg, expHParamInfos, info)
	}
	for _, m := range metrics {
		mn := appendString(nil, metricNameTag, m.Tag)
		mi := appendBytes(nil, metricInfoName, mn)
		ds := uint64(datasetValidate)
		if m.Training {
			ds = datasetTraining
		}
		mi = appendVarint(mi, metricInfoData, ds)
		msg = appendBytes(msg, expMetricInfos, mi)
	}
	return PluginEvent(wall, 0, ExperimentTag, HParamsPlugin, pluginData(hpExperiment, msg))
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// HValueOf is v as a hyperparameter's value: a string, a bool, or a number (any Go integer or
// float kind); false for any other type.
func HValueOf(v any) (HValue, bool) {
	switch x := v.(type) {
	case string:
		return String(x), true
	case bool:
		return Bool(x), true
	case int:
		return Number(float64(x)), true
	case int64:
		return Number(float64(x)), true
	case float64:
		return Number(x), true
	case float32:
		return Number(float64(x)), true
	}
	return HValue{}, false
}
