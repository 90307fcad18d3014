package result

// Better says which way a metric's values improve, as the plugin that
// reports it declares (pluginapi.MetricInfo.Better). The framework knows
// no unit: a baseline band's direction, what baseline record derives and
// what localisation compares runs by follow this declaration.
type Better string

// The directions a metric may declare.
const (
	// BetterUnknown: the plugin declares no direction (a count, a
	// percentage of either sense, an old plugin). Such a metric is judged
	// by the bands a baseline writes, neither recorded nor localised by.
	BetterUnknown Better = ""
	// BetterHigher: a rate (GB/s, Gb/s, TFLOPS, tokens/s); a band needs a
	// floor, or a dead link would pass.
	BetterHigher Better = "higher"
	// BetterLower: a time (us, ms); a band needs a ceiling, or any
	// slowdown would pass.
	BetterLower Better = "lower"
)

// Plot says how report.html draws a metric (pluginapi.MetricInfo.Plot).
type Plot string

// The plot kinds a metric may declare.
const (
	// PlotNone: not drawn.
	PlotNone Plot = ""
	// PlotCurve: values over message size (Metric.Size, bytes, log2 axis),
	// one curve per label set: nccl-tests' busbw.
	PlotCurve Plot = "curve"
	// PlotLabels: one value per label set, no size: a bar per set
	// (gemm's tflops per dtype, a training run's tokens/s).
	PlotLabels Plot = "labels"
	// PlotSteps: values over the integer label "step", one line per set
	// of the other labels (a training run's tokens/s at each step, warm-up
	// included): drawn beside what is judged, never judged itself unless
	// a baseline names it.
	PlotSteps Plot = "steps"
)

// Meaning is what the plugin of a test declares a metric means: its unit,
// which way is better, how it is drawn and whether baseline record records
// it by default. A run keeps the meanings of its tests' metrics
// (Test.Meanings) so its reports render from the results folder alone.
type Meaning struct {
	// Name is the metric's name ("busbw").
	Name string `json:"name"`
	// Unit is its unit, free text ("GB/s", "tokens/s").
	Unit   string `json:"unit"`
	Better Better `json:"better,omitempty"`
	Plot   Plot   `json:"plot,omitempty"`
	// Record: baseline record records the metric when --metric names
	// none. Only a metric better higher may be (record derives floors).
	Record bool `json:"record,omitempty"`
	// KeyLabels are labels every recorded baseline entry names, even where
	// a run's points share one value (pluginapi.MetricInfo.KeyLabels).
	KeyLabels []string `json:"key_labels,omitempty"`
}

// MeaningOf returns the meaning ms declare for the metric name, and
// whether they declare one.
func MeaningOf(ms []Meaning, name string) (Meaning, bool) {
	for _, m := range ms {
		if m.Name == name {
			return m, true
		}
	}
	return Meaning{}, false
}
