// Package sku reads SKU files: one YAML file per SKU holding its suites (which
// tests to run, with which parameters) and its golden baseline (expected
// values with tolerance bands and their sources). Malformed files are
// rejected with file, line and field.
//
// The package is divided by job. sku.go is the model: what a file holds and
// how to query it (Entries, Scopes). decode.go reads a file into it (Parse
// and the model's UnmarshalYAML methods); strict.go is the strict-YAML
// toolkit they use (only known keys, every problem reported with its line,
// yaml.v3's syntax-error lines put right); validate.go holds the file's own
// rules; problem.go the problems found, as data (file, line, field,
// message); catalog.go a folder of SKU files (Load, Get). band.go, curve.go,
// hardware.go and kubernetes.go each hold one part of the model with its
// decoding and its rules. Checks against the plugins are skucheck's.
package sku

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/result"
)

// SKU is one SKU file.
type SKU struct {
	// Name is the SKU's name as given to --sku ("h200").
	Name string `yaml:"sku"`
	// Description says what hardware this is.
	Description string `yaml:"description"`
	// GPUsPerNode is the node's GPU count, the default --gpus-per-node.
	GPUsPerNode int `yaml:"gpus_per_node"`
	// Instance names the cloud instance type or site the SKU describes
	// ("Azure NDm A100 v4"), where it is one and not the GPU alone: --sku
	// auto then prefers the generic SKU of the same GPU and names this one
	// as another match. "" for a SKU of a GPU.
	Instance string `yaml:"instance"`
	// GPU is the GPU's model as the tools print it, matched as a
	// case-insensitive substring ("H200" matches "NVIDIA H200"); a log from
	// another model fails. Empty: not checked.
	GPU string `yaml:"gpu"`
	// GPUVariant, when set, names the exact model of a family with several
	// (A100-SXM4-80GB, not -40GB); nil: any model of the family passes.
	GPUVariant *GPUVariant `yaml:"gpu_variant"`
	// Ceilings are the hardware's physical limits at every scope
	// (hardware.go): a measured number above one is impossible and fails.
	Ceilings []*Ceiling `yaml:"ceilings"`
	// Suites by name ("singlenode", "multinode").
	Suites map[string]*Suite `yaml:"suites"`
	// Baselines are the expected values.
	Baselines []*Entry `yaml:"baselines"`
	// Kubernetes is what the k8s launcher puts on pods (kubernetes.go); nil
	// when the file has no such section.
	Kubernetes *Kubernetes `yaml:"kubernetes"`
	// File is where the SKU was read from (for messages).
	File string `yaml:"-"`
	// Source says where the SKU comes from, for people and for the
	// results folder (result.Run.SKUSource): BuiltIn for a file gpuaccept
	// carries, else the path of the site's file (--baselines DIR/NAME.yaml);
	// "" for a file parsed on its own (Parse).
	Source string `yaml:"-"`
	// lines are the lines of the file's top-level keys ("suites"), of each
	// suite's key ("suite NAME") and of each baselines item ("entry N",
	// from 1), for problems of things that decoded to nothing.
	lines map[string]int
	// nameUnreadable: the sku key is there but its value is no string, or
	// the file did not decode; that error already says why Name is empty.
	nameUnreadable bool
}

// Suite is a named list of tests with their parameters.
type Suite struct {
	Description string `yaml:"description"`
	// Nodes is the suite's default node count (--nodes overrides).
	Nodes int `yaml:"nodes"`
	// Params apply to every test of the suite; a test's own params win.
	Params map[string]string `yaml:"params"`
	Tests  []*SuiteTest      `yaml:"tests"`
	Line   int               `yaml:"-"`
}

// Has says test ("plugin.test") is one of the suite's tests.
func (s *Suite) Has(test string) bool {
	for _, st := range s.Tests {
		if st.Test == test {
			return true
		}
	}
	return false
}

// SuiteTest is one entry of a suite.
type SuiteTest struct {
	// Test is "plugin.test", e.g. "nccl.all_reduce".
	Test string `yaml:"test"`
	// Params are the plugin's parameters for this test (strings; the plugin
	// parses them and documents their units in Describe).
	Params map[string]string `yaml:"params"`
	// Skip, when set, lists the test without running it, with this reason.
	Skip string `yaml:"skip"`
	// Timeout bounds the test; zero means the run's --timeout.
	Timeout time.Duration `yaml:"timeout"`
	// MinGPUs is the fewest GPUs (ranks: nodes x GPUs per node) at which
	// the test means something (GPU-to-GPU copies, collectives: 2); a run
	// of fewer skips it, saying so (SkipReason). 0: any count.
	MinGPUs int `yaml:"min_gpus"`
	// SiteParams name the test's parameters that choose what is measured
	// on a site rather than how it is judged (ibperf's pairs, the HCA map:
	// which NIC of one node talks to which of the other). A site sets them
	// with --param or its site file; gpuaccept verify holds a run to the
	// suite's value of every other parameter but re-judges the raw
	// outputs with the run's own value of these (a note, no finding).
	// Each is a parameter the test's plugin declares (skucheck).
	SiteParams []string `yaml:"site_params"`
	// Metrics are the metrics the SKU file declares for the test, for a
	// test that reads any output by patterns (workload.command): each
	// with its pattern, unit and direction (declared.go). The decoder
	// hands them to the plugin as the parameter DeclaredParam; the
	// framework judges, draws and records them as it does a plugin's own.
	Metrics []*DeclaredMetric `yaml:"metrics"`
	Line    int               `yaml:"-"`
	// SiteParamsLine is the line of the site_params key (0: none).
	SiteParamsLine int `yaml:"-"`
	// handParam: params set DeclaredParam by hand (refused).
	handParam bool
}

// IsSiteParam says the suite lets a site set the test's parameter key
// (SiteParams).
func (st *SuiteTest) IsSiteParam(key string) bool {
	return st != nil && slices.Contains(st.SiteParams, key)
}

// SkipReason is why the suite does not run the test at scope: its Skip,
// or that the scope has fewer GPUs than MinGPUs; "" when it runs.
func (st *SuiteTest) SkipReason(scope plan.Scope) string {
	if st.Skip != "" {
		return st.Skip
	}
	if n := scope.Nodes * scope.GPUsPerNode; st.MinGPUs > 0 && n < st.MinGPUs {
		return fmt.Sprintf("needs at least %d GPUs, scope %s has %d", st.MinGPUs, scope, n)
	}
	return ""
}

// LabelText renders labels (an entry's, or a measured metric's) as sorted
// "key=value" pairs joined by commas: "placement=in-place,type=float";
// "" for none. Sorted, so that it also serves as a map key for a curve.
func LabelText(labels map[string]string) string {
	kv := make([]string, 0, len(labels))
	for k, v := range labels {
		kv = append(kv, k+"="+v)
	}
	sort.Strings(kv)
	return strings.Join(kv, ",")
}

// Entry is one baseline entry: the expected values of one metric of one test
// at one scope, either a single value or a curve of per-size points.
type Entry struct {
	Test string `yaml:"test"`
	// Scope is the shape the values were measured at, written
	// {nodes: N, gpus_per_node: G} (decoded by decodeScope).
	Scope  plan.Scope        `yaml:"-"`
	Metric string            `yaml:"metric"`
	Unit   string            `yaml:"unit"`
	Labels map[string]string `yaml:"labels"`
	// Band applies to every point unless the point gives its own edges.
	Band Band `yaml:"-"`
	// Value and Size give a single expected value (Size 0: not per size).
	Value *float64 `yaml:"value"`
	Size  Size     `yaml:"size"`
	// Points give a curve: one expected value per message size.
	Points []Point `yaml:"points"`
	// Summary, when set (peak, largest, mean), judges Value against one
	// number computed from the measured curve instead of a single point.
	Summary string `yaml:"summary"`
	// Range bounds the sizes a summary or the dip check looks at.
	Range *SizeRange `yaml:"range"`
	// Dip, when set, checks that the curve does not fall as size grows.
	Dip *Dip `yaml:"dip"`
	// Ceiling is the physical limit (NVLink, NIC line rate) in Unit, for
	// efficiency figures; 0 when unknown.
	Ceiling float64 `yaml:"ceiling"`
	// Source says where the numbers came from (seed file and line, measured
	// run with date, machine and versions).
	Source string `yaml:"source"`
	// Basis is the authority the entry judges on (Kind): "golden"
	// (or empty) for a baseline the site recorded on its own hardware
	// (gpuaccept baseline record), result.BasisReference for a cited public
	// measurement of healthy hardware of the SKU (every entry gpuaccept
	// ships). Reports, JUnit and results.json name it per verdict.
	Basis string `yaml:"basis"`
	Line  int    `yaml:"-"`
	// fieldLines are the lines of the entry's keys, so that an error about
	// a field names the field's own line.
	fieldLines map[string]int
	// unknown are the entry's unknown keys, reported by validate: the rest
	// of the entry decoded, and its own problems are worth reporting too.
	unknown []error
}

// Kind is the entry's authority: Basis, or result.BasisGolden when the
// file does not say (a site's own recording).
func (e *Entry) Kind() string {
	if e.Basis == "" {
		return result.BasisGolden
	}
	return e.Basis
}

// FieldLine is the line of the entry's key field ("unit", "labels",
// "value"), or the entry's own line when the field is not written (a
// missing field has no line of its own) or the entry was built in code.
func (e *Entry) FieldLine(field string) int {
	if l, ok := e.fieldLines[field]; ok {
		return l
	}
	return e.Line
}

// Point is one expected value of a curve.
type Point struct {
	Size  Size    `yaml:"size"`
	Value float64 `yaml:"value"`
	// Band, when set, overrides edges of the entry's band for this size.
	Band Band `yaml:"-"`
	Line int  `yaml:"-"`
}

// Size is a message size in bytes. In YAML it is an integer or a string with
// a binary suffix: "4G", "4 GiB", "512K", "8M".
type Size int64

// ParseSize parses a size as result.ParseBytes does ("4G", "4 GiB", ...).
func ParseSize(s string) (Size, error) {
	v, err := result.ParseBytes(s)
	return Size(v), err
}

// Scopes lists the scopes the baseline has for a test, sorted.
func (s *SKU) Scopes(test string) []plan.Scope {
	seen := map[plan.Scope]bool{}
	var out []plan.Scope
	for _, e := range s.Baselines {
		if e.Test == test && !seen[e.Scope] {
			seen[e.Scope] = true
			out = append(out, e.Scope)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Nodes != out[j].Nodes {
			return out[i].Nodes < out[j].Nodes
		}
		return out[i].GPUsPerNode < out[j].GPUsPerNode
	})
	return out
}

// Entries returns the baseline entries of a test at a scope.
func (s *SKU) Entries(test string, sc plan.Scope) []*Entry {
	var out []*Entry
	for _, e := range s.Baselines {
		if e.Test == test && e.Scope == sc {
			out = append(out, e)
		}
	}
	return out
}

// SuiteNames lists the SKU's suites, sorted.
func (s *SKU) SuiteNames() []string {
	out := make([]string, 0, len(s.Suites))
	for n := range s.Suites {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
