package history

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gpuaccept/gpuaccept/framework/manifest"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir"
)

// partLabels are the labels that name the part a point was measured on,
// not what was measured: they are left out of a series' key, so that a
// GPU moved to another host (another host name, another index) continues
// its series.
var partLabels = map[string]bool{"host": true, "gpu": true, "hca": true, "nic": true}

// Part names the piece of hardware a point was measured on: its GPU
// (by serial, else UUID), else its NIC (by GUID, else by host and
// adapter name), else its host.
type Part struct {
	// Kind is "gpu", "nic" or "node".
	Kind string `json:"kind"`
	// ID is the serial or UUID of a GPU, the GUID (or "HOST/NAME") of a
	// NIC, the host name of a node.
	ID string `json:"id"`
	// Name is how a message names it: "GPU 1651624103756", "mlx5_3",
	// "node node17".
	Name string `json:"name"`
}

// PartOf is the part p was measured on; ok is false for a point that
// names none (no host either).
func PartOf(p Point) (part Part, ok bool) {
	switch {
	case p.GPUSerial != "":
		return Part{"gpu", p.GPUSerial, "GPU " + p.GPUSerial}, true
	case p.GPUUUID != "":
		return Part{"gpu", p.GPUUUID, "GPU " + p.GPUUUID}, true
	case p.NICGUID != "":
		return Part{"nic", p.NICGUID, cmpOr(p.NIC, p.NICGUID)}, true
	case p.NIC != "" && p.Host != "":
		return Part{"nic", p.Host + "/" + p.NIC, p.NIC}, true
	case p.Host != "":
		return Part{"node", p.Host, "node " + p.Host}, true
	}
	return Part{}, false
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// seriesKey is what a point measured, whatever part: test, metric, the
// labels that do not name the part, size.
func seriesKey(p Point) string {
	l := map[string]string{}
	for k, v := range p.Labels {
		if !partLabels[k] {
			l[k] = v
		}
	}
	return p.Test + "\x00" + p.Metric + "\x00" + labelsText(l) + "\x00" + strconv.FormatInt(p.Size, 10)
}

// seriesOf is the key of p's series: its part (PartOf), its run's SKU,
// its GPU model (empty where unknown) and what it measured (seriesKey).
// Values of one host name under two SKUs or GPU models are two series,
// never compared: recordings of every kind of machine are all of host
// "vm".
func seriesOf(part Part, p Point) string {
	return part.Kind + "\x00" + part.ID + "\x00" + p.SKU + "\x00" + p.GPUModel + "\x00" + seriesKey(p)
}

// accepted says p's verdict accepted the part: pass, or warn (a pass with
// a remark).
func accepted(p Point) bool {
	return p.Status == string(result.Pass) || p.Status == string(result.Warn)
}

// DriftLine is one series of one part: its latest value against its
// acceptance value.
type DriftLine struct {
	Part Part `json:"part"`
	// SKU is the runs' SKU and GPUModel the GPU model (empty where
	// unknown): a series is of one part, one SKU and one GPU model.
	SKU      string `json:"sku"`
	GPUModel string `json:"gpu_model,omitempty"`
	// Host is where the latest value was measured.
	Host   string            `json:"host,omitempty"`
	Test   string            `json:"test"`
	Metric string            `json:"metric"`
	Labels map[string]string `json:"labels,omitempty"`
	Size   int64             `json:"size,omitempty"`
	Unit   string            `json:"unit"`
	// First is the acceptance value: the earliest the store holds that
	// passed (or warned); the earliest at all when none did (Accepted
	// false).
	First    float64   `json:"first"`
	FirstAt  time.Time `json:"first_at"`
	FirstRun string    `json:"first_run"`
	Accepted bool      `json:"accepted"`
	// Last is the latest value, LastStatus its verdict.
	Last       float64   `json:"last"`
	LastAt     time.Time `json:"last_at"`
	LastRun    string    `json:"last_run"`
	LastStatus string    `json:"last_status"`
	// Change is (Last - First) / First: -0.09 for 9% lower.
	Change float64 `json:"change"`
}

// String is the line people read: "mlx5_3 on node17 (h200x8):
// ibperf.ib_write_bw bw_avg at 4 MiB 361 Gb/s, -9% since its acceptance
// on 2026-12-01"; a node's line names the GPU model too, where known:
// "node vm (h100x1, NVIDIA H100 80GB HBM3): ...".
func (d DriftLine) String() string {
	since := "since its acceptance on"
	if !d.Accepted {
		since = "since its first run (not accepted) on"
	}
	where := d.Part.Name
	if d.Host != "" && d.Part.Kind != "node" {
		where += " on " + d.Host
	}
	var of []string
	if d.SKU != "" {
		of = append(of, d.SKU)
	}
	if d.Part.Kind == "node" && d.GPUModel != "" {
		of = append(of, d.GPUModel)
	}
	if len(of) > 0 {
		where += " (" + strings.Join(of, ", ") + ")"
	}
	return fmt.Sprintf("%s: %s %s %s, %s %s %s", where, d.Test, metricText(d.Metric, d.Labels, d.Size), valueText(d.Last, d.Unit),
		percent(d.Change), since, d.FirstAt.UTC().Format("2006-01-02"))
}

// metricText is "bw{op=copy} at 1 GiB", the labels that do not name the
// part, sorted.
func metricText(metric string, labels map[string]string, size int64) string {
	var ls []string
	for k, v := range labels {
		if !partLabels[k] {
			ls = append(ls, k+"="+v)
		}
	}
	sort.Strings(ls)
	s := metric
	if len(ls) > 0 {
		s += "{" + strings.Join(ls, ",") + "}"
	}
	if size > 0 {
		s += " at " + result.FormatBytes(size)
	}
	return s
}

// valueText is a value to four significant digits, whole above 1000:
// "361 Gb/s", "55.37 GB/s", "3025 GB/s".
func valueText(v float64, unit string) string {
	s := strconv.FormatFloat(v, 'g', 4, 64)
	if math.Abs(v) >= 1000 {
		s = strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strings.TrimSpace(s + " " + unit)
}

// percent is a change as "-9%", "+0.4%": one decimal below 10%.
func percent(c float64) string {
	pct := c * 100
	if math.Abs(pct) < 0.05 {
		return "+0%" // not "-0%" for a change that rounds to none
	}
	if math.Abs(pct) >= 10 {
		return fmt.Sprintf("%+.0f%%", pct)
	}
	return strings.Replace(fmt.Sprintf("%+.1f%%", pct), ".0%", "%", 1)
}

// series groups points by part and series key, each group in time order
// (the order Points returns).
type series struct {
	part   Part
	points []Point
}

func group(points []Point) []series {
	idx := map[string]int{}
	var out []series
	for _, p := range points {
		part, ok := PartOf(p)
		if !ok || math.IsNaN(p.Value) {
			continue
		}
		k := seriesOf(part, p)
		i, seen := idx[k]
		if !seen {
			i = len(out)
			idx[k] = i
			out = append(out, series{part: part})
		}
		out[i].points = append(out[i].points, p)
	}
	return out
}

// acceptance is the point a series is compared with: its earliest that
// was accepted, else its earliest.
func acceptance(ps []Point) (Point, bool) {
	for _, p := range ps {
		if accepted(p) {
			return p, true
		}
	}
	return ps[0], false
}

// Drift compares, for every part and series that f selects and that the
// store holds from two runs or more, the latest value with the part's own
// acceptance value (DriftLine). A GPU's series spans every host it was
// measured on; a series is of one SKU and one GPU model (seriesOf). Lines are sorted by part, test, metric, labels and size.
func Drift(ctx context.Context, s Store, f Filter) ([]DriftLine, error) {
	points, err := s.Points(ctx, f)
	if err != nil {
		return nil, err
	}
	var out []DriftLine
	for _, g := range group(points) {
		last := g.points[len(g.points)-1]
		first, ok := acceptance(g.points)
		if first.Digest == last.Digest {
			continue
		}
		d := DriftLine{Part: g.part, SKU: last.SKU, GPUModel: last.GPUModel, Host: last.Host, Test: last.Test, Metric: last.Metric, Labels: withoutPart(last.Labels), Size: last.Size, Unit: last.Unit,
			First: first.Value, FirstAt: first.At, FirstRun: first.Digest, Accepted: ok,
			Last: last.Value, LastAt: last.At, LastRun: last.Digest, LastStatus: last.Status}
		if first.Value != 0 {
			d.Change = (last.Value - first.Value) / math.Abs(first.Value)
		}
		out = append(out, d)
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Part != b.Part {
			return a.Part.Kind+a.Part.ID < b.Part.Kind+b.Part.ID
		}
		if a.SKU != b.SKU || a.GPUModel != b.GPUModel {
			return a.SKU+"\x00"+a.GPUModel < b.SKU+"\x00"+b.GPUModel
		}
		if a.Test != b.Test {
			return a.Test < b.Test
		}
		if a.Metric != b.Metric {
			return a.Metric < b.Metric
		}
		if la, lb := labelsText(a.Labels), labelsText(b.Labels); la != lb {
			return la < lb
		}
		return a.Size < b.Size
	})
	return out, nil
}

func withoutPart(l map[string]string) map[string]string {
	var out map[string]string
	for k, v := range l {
		if !partLabels[k] {
			if out == nil {
				out = map[string]string{}
			}
			out[k] = v
		}
	}
	return out
}

// Against values for Compare.
const (
	// AgainstAcceptance compares with each part's acceptance value.
	AgainstAcceptance = "acceptance"
	// AgainstLast compares with each part's latest value from another run.
	AgainstLast = "last"
)

// Key is a point of a run as Compare keys it: its test, metric, labels
// (canonical JSON, every label) and size, as the run's result.Judged has
// them.
type Key struct {
	Test, Metric, Labels string
	Size                 int64
}

// KeyOf is the Key of metric m of test.
func KeyOf(test string, m result.Metric) Key {
	return Key{Test: test, Metric: m.Name, Labels: labelsText(m.Labels), Size: m.Size}
}

// Delta is a point of a run against an earlier value of the same part.
type Delta struct {
	Part Part `json:"part"`
	// Value is the run's; Against the earlier value, measured at AgainstAt
	// in run AgainstRun (a digest).
	Value      float64   `json:"value"`
	Against    float64   `json:"against"`
	AgainstAt  time.Time `json:"against_at"`
	AgainstRun string    `json:"against_run"`
	// Change is (Value - Against) / Against.
	Change float64 `json:"change"`
}

// Compare sets each point of run (with its Hardware, as Import reads it)
// against the store's values of the same part and series: against
// AgainstAcceptance (the part's acceptance value), AgainstLast (its latest
// value from another run) or a run's digest ("sha256:HEX" as printed at
// sign-off, or the bare hex: that run's value). The run's own points, if
// it is in the store already (same results folder, run.Dir), are not
// compared with. Points the store holds nothing to compare with are left
// out. The error is a bad against, or the store's.
func Compare(ctx context.Context, s Store, run *result.Run, against string) (map[Key]Delta, error) {
	out := map[Key]Delta{}
	if against != AgainstAcceptance && against != AgainstLast {
		hex, err := manifest.ParseDigest(against)
		if err != nil {
			return nil, fmt.Errorf("compare with %q: want acceptance, last or a run's digest: %w", against, err)
		}
		against = "sha256:" + hex
	}
	dir := run.Dir
	if dir != "" {
		if abs, err := filepath.Abs(dir); err == nil {
			dir = abs
		}
	}
	mine := PointsOf(run)
	for i := range mine {
		mine[i].SKU = run.SKU // as Points fills it from the run's row
	}
	asked := map[Filter]bool{}
	var earlier []Point
	for _, p := range mine {
		f := Filter{Test: p.Test}
		switch part, ok := PartOf(p); {
		case !ok:
			continue
		case part.Kind == "gpu":
			f.GPU = part.ID
		case part.Kind == "nic" && p.NICGUID != "":
			f.NIC = p.NICGUID
		default:
			f.Host = p.Host
		}
		if against != AgainstAcceptance && against != AgainstLast {
			f.Digest = against
		}
		if asked[f] {
			continue
		}
		asked[f] = true
		ps, err := s.Points(ctx, f)
		if err != nil {
			return nil, err
		}
		earlier = append(earlier, ps...)
	}
	byKey := map[string][]Point{}
	for _, g := range group(earlier) {
		byKey[seriesOf(g.part, g.points[0])] = g.points
	}
	i := 0
	for _, t := range run.Tests {
		for _, m := range t.Metrics {
			p := mine[i]
			i++
			part, ok := PartOf(p)
			if !ok || math.IsNaN(p.Value) {
				continue
			}
			ps := byKey[seriesOf(part, p)]
			var other []Point
			for _, q := range ps {
				if dir == "" || q.Folder != dir {
					other = append(other, q)
				}
			}
			if len(other) == 0 {
				continue
			}
			ref := other[len(other)-1]
			if against == AgainstAcceptance {
				ref, _ = acceptance(other)
			}
			d := Delta{Part: part, Value: p.Value, Against: ref.Value, AgainstAt: ref.At, AgainstRun: ref.Digest}
			if ref.Value != 0 {
				d.Change = (p.Value - ref.Value) / math.Abs(ref.Value)
			}
			out[KeyOf(t.Name, m.Metric)] = d
		}
	}
	return out, nil
}

// CheckAgainst checks a --compare value: "" (none), AgainstAcceptance,
// AgainstLast or a run's digest (manifest.ParseDigest).
func CheckAgainst(against string) error {
	switch against {
	case "", AgainstAcceptance, AgainstLast:
		return nil
	}
	if _, err := manifest.ParseDigest(against); err != nil {
		return fmt.Errorf("%q: want acceptance, last or a run's digest (sha256:HEX): %w", against, err)
	}
	return nil
}

// CompareFolder is --compare: the finished, sealed results folder dir
// (its run and hardware read back, as Import reads them) set against the
// store loc names (a --history value), against AgainstAcceptance,
// AgainstLast or a run's digest, as one line per point that has an
// earlier value of the same part, in the run's order: "GPU
// 1651624103756 on vm: gemm.matmul tflops{dtype=bf16} 317.9 TFLOPS,
// -57% against its acceptance on 2026-12-07 (734.5 TFLOPS)". The
// deltas are the store's, not the folder's: they go to the terminal,
// never into a signed folder (no raw output proves them).
func CompareFolder(ctx context.Context, loc, dir, against string) ([]string, error) {
	s, err := Open(ctx, loc)
	if err != nil {
		return nil, fmt.Errorf("compare with %s: %w", against, err)
	}
	defer s.Close()
	run, _, err := resultsdir.LoadFolder(dir)
	if err != nil {
		return nil, fmt.Errorf("compare %s: %w", dir, err)
	}
	if run.Hardware, _, err = resultsdir.ReadHardware(dir); err != nil {
		return nil, fmt.Errorf("compare %s: %w", dir, err)
	}
	run.Dir = dir
	deltas, err := Compare(ctx, s, run, against)
	if err != nil {
		return nil, err
	}
	what := "against its acceptance on"
	switch against {
	case AgainstAcceptance:
	case AgainstLast:
		what = "against its last run on"
	default:
		what = "against run " + against + " on"
	}
	var out []string
	for _, t := range run.Tests {
		for _, m := range t.Metrics {
			d, ok := deltas[KeyOf(t.Name, m.Metric)]
			if !ok {
				continue
			}
			out = append(out, fmt.Sprintf("%s: %s %s %s, %s %s %s (%s)", d.Part.Name, t.Name, metricText(m.Name, m.Labels, m.Size),
				valueText(d.Value, m.Unit), percent(d.Change), what, d.AgainstAt.UTC().Format("2006-01-02"), valueText(d.Against, m.Unit)))
		}
	}
	return out, nil
}
