package workloads

import (
	"os/exec"
	"strings"
	"testing"
)

// TestTorchBenchPython runs torchbench.py's own tests (test_torchbench.py:
// the NUMA binding and placement functions on fake sysfs trees), which
// need python3 and no torch.
func TestTorchBenchPython(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
	out, err := exec.Command(py, "-m", "unittest", "discover", "-s", ".", "-p", "test_torchbench.py").CombinedOutput()
	if err != nil {
		t.Fatalf("python3 -m unittest: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "OK") {
		t.Fatalf("python3 -m unittest said no OK:\n%s", out)
	}
}

// The embedded script is the file the tests exercise, and it still says
// how to run it unbound.
func TestTorchBenchEmbedded(t *testing.T) {
	for _, want := range []string{"def bind(", "--numa", `"placement"`} {
		if !strings.Contains(TorchBench, want) {
			t.Errorf("the embedded torchbench.py has no %q", want)
		}
	}
}
