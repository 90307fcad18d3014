package result

import (
	"fmt"
	"sort"
	"strings"
)

// Efficiency is how close a test came to a datasheet figure of its SKU's
// hardware (a sku.Ceiling: a GPU's matmul peak, its HBM, its PCIe link;
// for a collective the link it crosses at its scope, NVLink one way inside
// a node, the NICs across nodes): one per ceiling that limits points the
// test measured. The
// framework computes it (judge.Efficiencies) whether or not a baseline
// exists; no verdict depends on it.
type Efficiency struct {
	// Metric and Unit are the ceiling's ("tflops", "TFLOPS").
	Metric string `json:"metric"`
	Unit   string `json:"unit"`
	// Labels are the ceiling's label filter (dtype=bf16); empty: every
	// point of Metric.
	Labels map[string]string `json:"labels,omitempty"`
	// Peak is the figure in Unit the points are measured against
	// (sku.Ceiling.Reference: 450 GB/s of NVLink 4 one way inside a node;
	// 93.75 GB/s for an alltoall of 2 x 8 GPUs with a 400 Gb/s NIC each).
	Peak float64 `json:"peak"`
	// Link names the hardware the figure is of ("H200 bf16 dense",
	// "PCIe Gen5 x16", "AINIC 400 Gb/s per GPU: alltoall across 2 nodes,
	// ..."), Source the datasheet.
	Link   string `json:"link"`
	Source string `json:"source,omitempty"`
	// Points is how many measured points the ceiling limits.
	Points int `json:"points"`
	// Curve says the points span several message sizes: the best is what
	// the link reached, the worst a small message, so only the best is
	// meaningful.
	Curve bool `json:"curve,omitempty"`
	// Best and Worst are the highest and the lowest of those points (the
	// same point when there is one).
	Best  Metric `json:"best"`
	Worst Metric `json:"worst"`
	// Lowest names the lowest point by the labels that tell it from the
	// others ("gpu=3 mode=concurrent"); "" when none differ.
	Lowest string `json:"lowest,omitempty"`
	// Over says, where Best is above Peak (over 100%), why it can be (a
	// tree algorithm across nodes, in-switch reduction) or that it cannot
	// (sku.Ceiling.Over); "" at 100% or less.
	Over string `json:"over,omitempty"`
}

// Ratio is value / Peak: 0.75 for 741 of 989 TFLOPS; 0 when Peak is 0.
func (e Efficiency) Ratio(value float64) float64 {
	if e.Peak <= 0 {
		return 0
	}
	return value / e.Peak
}

// What names the efficiency's metric and label filter: "tflops dtype=bf16".
func (e Efficiency) What() string {
	if l := LabelText(e.Labels, nil); l != "" {
		return e.Metric + " " + l
	}
	return e.Metric
}

// Text is the efficiency in one line for reports: "741.0 TFLOPS, 74.9% of
// 989 TFLOPS (H200 bf16 dense)"; for a curve "peak 343.5 GB/s at 4 GiB,
// 76.3% of 450 GB/s (NVLink 4 one way)"; for several points of one kind
// (every GPU of a node) the range, naming the lowest point's labels.
func (e Efficiency) Text() string {
	of := fmt.Sprintf("of %s %s (%s)", trimNum(e.Peak), e.Unit, e.Link)
	best := fmt.Sprintf("%.1f %s", e.Best.Value, e.Unit)
	switch {
	case e.Curve:
		at := ""
		if e.Best.Size > 0 {
			at = " at " + FormatBytes(e.Best.Size)
		}
		return fmt.Sprintf("peak %s%s, %.1f%% %s%s", best, at, 100*e.Ratio(e.Best.Value), of, e.overText())
	case e.Points <= 1 || e.Worst.Value == e.Best.Value:
		return fmt.Sprintf("%s, %.1f%% %s%s", best, 100*e.Ratio(e.Best.Value), of, e.overText())
	}
	lowest := ""
	if e.Lowest != "" {
		lowest = " (lowest: " + e.Lowest + ")"
	}
	return fmt.Sprintf("%.1f to %s, %.1f%% to %.1f%% %s%s%s", e.Worst.Value, best,
		100*e.Ratio(e.Worst.Value), 100*e.Ratio(e.Best.Value), of, lowest, e.overText())
}

func (e Efficiency) overText() string {
	if e.Over == "" {
		return ""
	}
	return "; " + e.Over
}

// LabelText is labels as "k=v k=v" in key order, leaving out the keys of
// skip; "" for none.
func LabelText(labels, skip map[string]string) string {
	keys := make([]string, 0, len(labels))
	for k := range labels {
		if _, ok := skip[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + labels[k]
	}
	return strings.Join(parts, " ")
}

// VaryingLabels are m's labels, beyond placement (shown with the metric's
// name), whose values differ among the points of among, as "k=v k=v": what
// tells m apart where the others are constant (nccl-tests' type=float
// redop=sum on every point, a GEMM's gpu=3 among eight GPUs); "" when none
// differ.
func VaryingLabels(m Metric, among []Metric) string {
	keep := map[string]string{}
	for k, v := range m.Labels {
		if k == "placement" {
			continue
		}
		for _, o := range among {
			if o.Labels[k] != v {
				keep[k] = v
				break
			}
		}
	}
	return LabelText(keep, nil)
}

// trimNum prints a datasheet figure without trailing zeros: 989, 4800,
// 2516.6.
func trimNum(v float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.2f", v), "0"), ".")
}
