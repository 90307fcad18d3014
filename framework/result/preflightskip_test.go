package result

import (
	"testing"

	"gotest.tools/v3/assert"
)

// The reason a test is skipped on bad nodes names each node once (a
// health.node message starts with its node too) and counts the further
// checks in words: "1 more check", "2 more checks".
func TestPreflightSkip(t *testing.T) {
	remap := BadNode{Host: "vm", Code: "GA-GPU-ROWREMAP-FAIL", Check: "row remap failure", Message: "vm: GPU 0 (00000000:00:06.0): a row remap failed"}
	pcie := BadNode{Host: "vm", Code: "GA-PCIE-DOWNGRADE", Check: "PCIe link", Message: "vm: GPU 0 (00000000:00:06.0): width x8, max x16"}
	other := BadNode{Host: "b", Check: "XID"}
	cases := []struct {
		name string
		bad  []BadNode
		want string
	}{
		{"none", nil, ""},
		{"one", []BadNode{remap}, "node vm failed health: GA-GPU-ROWREMAP-FAIL GPU 0 (00000000:00:06.0): a row remap failed"},
		{"one more", []BadNode{remap, pcie}, "node vm failed health: GA-GPU-ROWREMAP-FAIL GPU 0 (00000000:00:06.0): a row remap failed (and 1 more check)"},
		{"two more", []BadNode{remap, pcie, pcie}, "node vm failed health: GA-GPU-ROWREMAP-FAIL GPU 0 (00000000:00:06.0): a row remap failed (and 2 more checks)"},
		{"no message", []BadNode{other}, "node b failed health: XID"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, PreflightSkip(c.bad), c.want)
		})
	}
}
