package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
	"gotest.tools/v3/assert"
)

// fieldCase is one real public output of testdata/field and the verdict a
// careful engineer reads from it (testdata/field/README.md has the format).
type fieldCase struct {
	Source      string   `yaml:"source"`
	Tool        string   `yaml:"tool"`
	Hardware    string   `yaml:"hardware"`
	Test        string   `yaml:"test"`
	SKU         string   `yaml:"sku"`
	Nodes       int      `yaml:"nodes"`
	GPUsPerNode int      `yaml:"gpus_per_node"`
	Files       []string `yaml:"files"`
	Verdict     string   `yaml:"verdict"`
	// TrainLog holds what plugins/internal/trainlog's own test asserts of
	// a training log (its reader and gates, case by case).
	TrainLog any `yaml:"trainlog"`
	// Telemetry holds what plugins/telemetry's own test asserts of a
	// tool's samples (its readers and summary, case by case).
	Telemetry any `yaml:"telemetry"`
	// Hang holds what plugins/internal/hang's own test asserts of a hung
	// run's logs, RAS reports and stacks (its reader and suspect).
	Hang   any `yaml:"hang"`
	Expect struct {
		Status string `yaml:"status"`
		// Message holds substrings the test's message must contain.
		Message []string `yaml:"message"`
		// NotMessage holds substrings it must not contain.
		NotMessage []string `yaml:"not_message"`
		// Codes holds fault codes (docs/FAULTS.md) that checks which did
		// not hold must carry: a health verdict is asserted by its code,
		// not only by its words.
		Codes  []string `yaml:"codes"`
		Metric *struct {
			Name   string            `yaml:"name"`
			Labels map[string]string `yaml:"labels"`
			Size   int64             `yaml:"size"`
			Value  float64           `yaml:"value"`
		} `yaml:"metric"`
	} `yaml:"expect"`
}

const fieldDir = "../../testdata/field"

// TestFieldCorpus runs check on every real output kept under
// testdata/field and holds gpuaccept to the verdict and the key number a
// careful engineer reads from it.
func TestFieldCorpus(t *testing.T) {
	var cases []string
	err := filepath.WalkDir(fieldDir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Name() == "case.yaml" {
			cases = append(cases, p)
		}
		return err
	})
	assert.NilError(t, err)
	sort.Strings(cases)
	assert.Assert(t, len(cases) > 0, "no case.yaml under %s", fieldDir)
	for _, cf := range cases {
		dir := filepath.Dir(cf)
		name, _ := filepath.Rel(fieldDir, dir)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(cf)
			assert.NilError(t, err)
			var c fieldCase
			dec := yaml.NewDecoder(strings.NewReader(string(data)))
			dec.KnownFields(true)
			assert.NilError(t, dec.Decode(&c), cf)
			for _, f := range []struct{ what, v string }{{"source", c.Source}, {"tool", c.Tool}, {"hardware", c.Hardware}, {"test", c.Test}, {"sku", c.SKU}, {"verdict", c.Verdict}, {"expect.status", c.Expect.Status}} {
				assert.Assert(t, f.v != "", "%s: %s is empty", cf, f.what)
			}
			files := c.Files
			if len(files) == 0 {
				ents, err := os.ReadDir(dir)
				assert.NilError(t, err)
				for _, e := range ents {
					if e.Name() != "case.yaml" && !e.IsDir() {
						files = append(files, e.Name())
					}
				}
			}
			args := []string{"check", "--sku", c.SKU, "--test", c.Test, "--nodes", strconv.Itoa(c.Nodes), "--gpus-per-node", strconv.Itoa(c.GPUsPerNode), "--format", "json"}
			// The field corpus's own SKUs (generic: gates only; h200-1gpu)
			// stand in for the shipped ones where those have none to fit.
			if _, err := os.Stat(filepath.Join(fieldDir, "skus", c.SKU+".yaml")); err == nil {
				args = append(args, "--baselines", filepath.Join(fieldDir, "skus"))
			}
			for _, f := range files {
				args = append(args, filepath.Join(dir, f))
			}
			_, out, errs := cli(t, args...)
			var doc struct {
				Status string
				Tests  []struct {
					Name, Status, Message string
					Checks                []struct {
						Name, Message, Code string
						OK                  bool
					}
					Metrics []struct {
						Name   string
						Value  float64
						Size   int64
						Labels map[string]string
					}
				}
			}
			assert.NilError(t, json.Unmarshal([]byte(out), &doc), "stdout %q stderr %q", out, errs)
			assert.Equal(t, len(doc.Tests), 1, out)
			got := doc.Tests[0]
			assert.Equal(t, got.Status, c.Expect.Status, "%s\nverdict: %s\nmessage: %s", cf, c.Verdict, got.Message)
			for _, m := range c.Expect.Message {
				assert.Assert(t, strings.Contains(got.Message, m), "%s: message %q lacks %q", cf, got.Message, m)
			}
			for _, m := range c.Expect.NotMessage {
				assert.Assert(t, !strings.Contains(got.Message, m), "%s: message %q has %q", cf, got.Message, m)
			}
			for _, code := range c.Expect.Codes {
				found := false
				for _, ch := range got.Checks {
					found = found || !ch.OK && ch.Code == code
				}
				assert.Assert(t, found, "%s: no failed check carries %s: %+v", cf, code, got.Checks)
			}
			if want := c.Expect.Metric; want != nil {
				found := false
				for _, m := range got.Metrics {
					if m.Name != want.Name || m.Size != want.Size {
						continue
					}
					match := true
					for k, v := range want.Labels {
						match = match && m.Labels[k] == v
					}
					if !match {
						continue
					}
					found = true
					tol := math.Max(0.005*math.Abs(want.Value), 0.011)
					assert.Assert(t, math.Abs(m.Value-want.Value) <= tol, "%s: %s at %d %v is %v, want %v", cf, want.Name, want.Size, want.Labels, m.Value, want.Value)
					break
				}
				assert.Assert(t, found, "%s: no metric %s at size %d with labels %v", cf, want.Name, want.Size, want.Labels)
			}
		})
	}
}
