package judge

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir"
	"github.com/gpuaccept/gpuaccept/plugins/telemetry"
)

// Explain on a real failure and real telemetry: the H200 node suite run
// while another process ran matmuls (recordings h200x1-2026-12-01,
// node/baselined/busy: every gemm.matmul point fails its golden entry),
// with what nvidia-smi showed on that GPU during the busy run
// (node/smi-busy.csv: 1440 MHz, 693.90 W, SW power cap 0x4), and with
// what it showed with the clocks locked low (node/smi-lgc.csv: 1005 MHz,
// no reason active: a clock set by hand is no slowdown the GPU reports).
func TestExplain(t *testing.T) {
	rec := filepath.Join("..", "..", "testdata", "recordings", "h200x1-2026-12-01", "node")
	run, _, err := resultsdir.Load(filepath.Join(rec, "baselined", "busy"))
	assert.NilError(t, err)
	var gemm result.Test
	for _, tt := range run.Tests {
		if tt.Name == "gemm.matmul" {
			gemm = tt
		}
	}
	assert.Equal(t, gemm.Status, result.Fail)
	cases := []struct {
		name, csv string
		want      string // in every failed point's message and the test's; "" none
	}{
		{"busy: SW power cap", "smi-busy.csv", "while GPU 0 on vm ran at SM clock 1.44 GHz min, 60 C max, 694 W max: SW power cap in 1 of 1 samples"},
		{"clocks locked: nothing the GPU reports", "smi-lgc.csv", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, err := os.Open(filepath.Join(rec, c.csv))
			assert.NilError(t, err)
			defer f.Close()
			tel, err := telemetry.ReadTool(f, "vm")
			assert.NilError(t, err)
			assert.Equal(t, len(tel.GPUs), 1)
			tt := gemm
			tt.Metrics = append([]result.Judged(nil), gemm.Metrics...)
			tt.Telemetry = &tel
			got := Explain(tt)
			for i, m := range got.Metrics {
				if c.want == "" {
					assert.Equal(t, m.Message, gemm.Metrics[i].Message)
					continue
				}
				assert.Assert(t, strings.HasSuffix(m.Message, "; "+c.want), m.Message)
			}
			if c.want == "" {
				assert.Equal(t, got.Message, gemm.Message)
			} else {
				assert.Assert(t, strings.HasSuffix(got.Message, "; "+c.want), got.Message)
			}
		})
	}
}
