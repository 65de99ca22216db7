package tfevents

// The messages written, with the field numbers of TensorFlow's tensorflow/core/util/event.proto
// and tensorflow/core/framework/summary.proto (the same in TensorBoard's compat/proto copies):
//
//	message Event {
//	  double wall_time = 1;
//	  int64 step = 2;
//	  oneof what { string file_version = 3; Summary summary = 5; … }
//	}
//	message Summary { repeated Value value = 1; }
//	message Summary.Value {
//	  string tag = 1;
//	  SummaryMetadata metadata = 9;
//	  oneof value { float simple_value = 2; … }
//	}
//	message SummaryMetadata { PluginData plugin_data = 1; … }
//	message SummaryMetadata.PluginData { string plugin_name = 1; bytes content = 2; }
//
// Only these fields are written. A scalar is a Value with tag and simple_value, as PyTorch's
// SummaryWriter.add_scalar writes it; TensorBoard reads it as a scalar-plugin summary.
const (
	eventWallTime    = 1
	eventStep        = 2
	eventFileVersion = 3
	eventSummary     = 5

	summaryValue = 1

	valueTag         = 1
	valueSimpleValue = 2
	valueMetadata    = 9

	metadataPluginData = 1
	pluginName         = 1
	pluginContent      = 2
)

// FileVersion is the file_version of the first event of every file.
const FileVersion = "brain.Event:2"

// Scalar is one tagged value of a scalar summary.
type Scalar struct {
	Tag   string
	Value float64 // stored as a float32 (simple_value)
}

// VersionEvent is the serialized first event of a file: wall_time and file_version.
func VersionEvent(wall float64) []byte {
	b := appendDouble(nil, eventWallTime, wall)
	return appendBytes(b, eventFileVersion, []byte(FileVersion))
}

// ScalarEvent is the serialized event of one step's scalars: all of them in one Summary, so that
// a record holds a step's values whole or not at all.
func ScalarEvent(wall float64, step int64, vals []Scalar) []byte {
	var sum []byte
	for _, v := range vals {
		val := appendString(nil, valueTag, v.Tag)
		val = appendOneofFloat(val, valueSimpleValue, float32(v.Value))
		sum = appendBytes(sum, summaryValue, val)
	}
	return summaryEvent(wall, step, sum)
}

// PluginEvent is the serialized event of one Value with tag and plugin metadata (plugin name
// and content) and no value, the form of the hparams plugin's summaries.
func PluginEvent(wall float64, step int64, tag, plugin string, content []byte) []byte {
	pd := appendString(nil, pluginName, plugin)
	pd = appendBytes(pd, pluginContent, content)
	md := appendBytes(nil, metadataPluginData, pd)
	val := appendString(nil, valueTag, tag)
	val = appendBytes(val, valueMetadata, md)
	return summaryEvent(wall, step, appendBytes(nil, summaryValue, val))
}

func summaryEvent(wall float64, step int64, summary []byte) []byte {
	b := appendDouble(nil, eventWallTime, wall)
	b = appendVarint(b, eventStep, uint64(step))
	return appendBytes(b, eventSummary, summary)
}
