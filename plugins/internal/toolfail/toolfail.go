// Package toolfail tells, from a tool's own words, "the tool could not
// run" (a setup to fix: an ERROR) from "the device failed while it
// measured" (the hardware: a FAIL). gpuaccept's README defines exit 1 as
// a faulty machine and exit 3 as a test that could not run; a node
// without PyTorch, a driver the runtime cannot use or a binary that is
// not there must never read as a bad GPU. Every plugin that must decide
// what a failed run's message means asks Classify, so that the table
// below is the one place the project keeps these patterns.
//
// The table holds real messages only, each with where it comes from.
// Hardware patterns are tried first: an output that says both (the
// driver lost a GPU, then the runtime found no device) is a hardware
// fault.
package toolfail

import (
	"regexp"
	"strings"
)

// Kind is what a failure message says about the machine.
type Kind int

const (
	// Unknown: the message is in no pattern; the plugin keeps its own
	// rule (a missing result is a failed completeness gate).
	Unknown Kind = iota
	// Setup: the tool could not run or could not reach the GPU: a
	// missing interpreter, module, binary or library, no permission, a
	// driver or runtime that did not initialise. Fix the node's
	// software or the launch; the hardware was not measured.
	Setup
	// Hardware: the device reported a fault while it was measured.
	Hardware
)

// CouldNotRun heads the message of a test that a Setup line explains:
// every plugin words it alike, so a reader (and a search in a results
// folder) finds the setup failures of any tool by it.
const CouldNotRun = "the tool could not run (setup, not hardware): "

// String names the kind in messages: "setup", "hardware" or "unknown".
func (k Kind) String() string {
	switch k {
	case Setup:
		return "setup"
	case Hardware:
		return "hardware"
	}
	return "unknown"
}

// Pattern is one row of the table: a message text and what it means.
type Pattern struct {
	// Text is a substring of the message as the tool prints it, matched
	// case-sensitively; or, when RE is set, a description of RE.
	Text string
	// RE, when set, matches instead of Text.
	RE *regexp.Regexp
	// Kind is Setup or Hardware.
	Kind Kind
	// Source is who prints it and a real output that shows it.
	Source string
	// Why says why the message means Kind.
	Why string
}

// Patterns is the table, hardware rows first.
//
// Left out on purpose (Unknown: the plugin's own rule holds):
//   - "an illegal memory access was encountered" (cudaErrorIllegalAddress,
//     700): a kernel's bug as often as the device's; NVIDIA/nccl-tests#355
//     shows it from a device-API test the maintainers put down to the
//     code (testdata/field/nccl-tests/h800-2x8-alltoall-device-api-illegal-memory-access).
//   - "out of memory": another process on the GPU, or sizes too large.
//   - "invalid device ordinal" / hipErrorInvalidDevice: a GPU index past
//     the count, which is a missing GPU as often as a wrong -g or
//     CUDA_VISIBLE_DEVICES.
var Patterns = []Pattern{
	{Text: "uncorrectable ECC error encountered", Kind: Hardware,
		Source: "CUDA runtime, cudaErrorECCUncorrectable (214), as torch raises it: \"RuntimeError: CUDA error: uncorrectable ECC error encountered\" (pytorch/pytorch issues)",
		Why:    "the GPU's memory returned a double-bit error during the measurement"},
	{Text: "CUDA_ERROR_ECC_UNCORRECTABLE", Kind: Hardware,
		Source: "CUDA driver API name of the same error (cuda.h)",
		Why:    "as above"},
	{Text: "uncorrectable NVLink error", Kind: Hardware,
		Source: "CUDA runtime, cudaErrorNvlinkUncorrectable (220): \"uncorrectable NVLink error was detected during the execution\"",
		Why:    "an NVLink failed during the measurement"},
	{Text: "fallen off the bus", Kind: Hardware,
		Source: "NVIDIA driver, Xid 79 in the kernel log and nvidia-smi: \"GPU has fallen off the bus\"",
		Why:    "the GPU stopped answering on PCIe"},
	{Text: "NVRM: Xid", Kind: Hardware,
		Source: "NVIDIA driver's kernel log line \"NVRM: Xid (PCI:0000:...): 79, ...\" in a combined log",
		Why:    "the driver reported a GPU fault while the tool ran"},
	{Text: "unspecified launch failure", Kind: Hardware,
		Source: "CUDA runtime, cudaErrorLaunchFailure (719), with Xid 13/31/43 in the kernel log",
		Why:    "the fixed kernels measured (cuBLAS matmul, copies, NCCL's) crashed on the device, which a correct library does not do on good hardware"},

	{Text: "No module named", Kind: Setup,
		Source: "Python's ModuleNotFoundError, and torchbench.py's {\"kind\": \"error\", \"message\": \"import torch: No module named 'torch'\"} (workloads/torchbench.py main)",
		Why:    "the interpreter lacks the package: nothing ran on the GPU"},
	{Text: "import torch: ", Kind: Setup,
		Source: "workloads/torchbench.py main: the error record it prints for any ImportError of torch (a missing libcudart, a broken wheel)",
		Why:    "PyTorch could not be loaded: nothing ran on the GPU"},
	{Text: "torch sees no GPU", Kind: Setup,
		Source: "workloads/torchbench.py main: torch.cuda.is_available() is False (a CPU-only wheel, no driver, CUDA_VISIBLE_DEVICES empty)",
		Why:    "torch could not reach a GPU; health.node judges whether the GPUs are there"},
	{Text: "Torch not compiled with CUDA enabled", Kind: Setup,
		Source: "torch/cuda/__init__.py _lazy_init: AssertionError of a CPU-only wheel",
		Why:    "the wrong PyTorch build is installed"},
	{Text: "Found no NVIDIA driver on your system", Kind: Setup,
		Source: "torch/cuda/__init__.py _lazy_init: \"RuntimeError: Found no NVIDIA driver on your system.\"",
		Why:    "the driver is not loaded or not visible in the container"},
	{Text: "CUDA driver initialization failed", Kind: Setup,
		Source: "torch's warning \"CUDA initialization: CUDA driver initialization failed, you might not have a CUDA gpu.\" (c10/cuda)",
		Why:    "the driver could not be initialised for this process"},
	{Text: "no CUDA-capable device is detected", Kind: Setup,
		Source: "CUDA runtime, cudaErrorNoDevice (100): nccl-tests \"Test CUDA failure common.cu:730 'no CUDA-capable device is detected'\" (NVIDIA/nccl-tests#30), torch \"RuntimeError: CUDA error: no CUDA-capable device is detected\"",
		Why:    "the process sees no GPU (no /dev/nvidia* in the container, CUDA_VISIBLE_DEVICES, the driver not loaded); health.node counts the GPUs"},
	{Text: "CUDA_ERROR_NO_DEVICE", Kind: Setup,
		Source: "CUDA driver API name of the same error (cuInit)",
		Why:    "as above"},
	{Text: "no ROCm-capable device is detected", Kind: Setup,
		Source: "HIP runtime, hipErrorNoDevice (100): \"no ROCm-capable device is detected\" (ROCm/hip#3910)",
		Why:    "the process sees no GPU (/dev/kfd, /dev/dri not in the container, HIP_VISIBLE_DEVICES)"},
	{Text: "hipErrorNoDevice", Kind: Setup,
		Source: "HIP runtime's error name, as rccl-tests and rocblas-bench print it",
		Why:    "as above"},
	{Text: "CUDA driver version is insufficient", Kind: Setup,
		Source: "CUDA runtime, cudaErrorInsufficientDriver (35): nccl-tests \"Cuda failure common.cu:891 'CUDA driver version is insufficient for CUDA runtime version'\" (NVIDIA/nccl-tests#12)",
		Why:    "the tool was built for a newer CUDA than the node's driver"},
	{Text: "cudaErrorInsufficientDriver", Kind: Setup,
		Source: "CUDA runtime's error name (35)",
		Why:    "as above"},
	{Text: "couldn't communicate with the NVIDIA driver", Kind: Setup,
		Source: "nvidia-smi: \"NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running.\"",
		Why:    "the driver is not loaded: nothing about the GPUs could be read"},
	{Text: "Failed to initialize NVML", Kind: Setup,
		Source: "nvidia-smi and NVML users: \"Failed to initialize NVML: Driver/library version mismatch\" (driver upgraded without reboot), \"Failed to initialize NVML: Unknown Error\" (containers)",
		Why:    "NVML could not be used: nothing about the GPUs could be read"},
	{Text: "error while loading shared libraries", Kind: Setup,
		Source: "the dynamic loader: \"all_reduce_perf: error while loading shared libraries: libnccl.so.2: cannot open shared object file: No such file or directory\"",
		Why:    "the tool's libraries are not installed or not on LD_LIBRARY_PATH"},
	{Text: "command not found", Kind: Setup,
		Source: "bash, exit 127: \"bash: python3: command not found\"",
		Why:    "the tool is not installed or not on PATH"},
	{Text: "can't open file", Kind: Setup,
		Source: "CPython: \"python3: can't open file '/opt/torchbench.py': [Errno 2] No such file or directory\"",
		Why:    "the script is not where the parameters say"},
	{Text: "the shell's or env's exec failure", RE: regexp.MustCompile(`^(?:/usr/bin/env|env|(?:\S*/)?(?:bash|sh|dash|zsh)(?:: line \d+)?): '?[^\s']+'?: (?:No such file or directory|Permission denied)$`), Kind: Setup,
		Source: "env and bash when they exec the tool: \"/usr/bin/env: 'python3': No such file or directory\", \"bash: ./all_reduce_perf: Permission denied\", \"bash: /opt/nccl-tests/build/all_reduce_perf: No such file or directory\"",
		Why:    "the binary or interpreter is missing or not executable"},
	{Text: "execvp", RE: regexp.MustCompile(`execvp\(.*\) failed`), Kind: Setup,
		Source: "Open MPI's orted when it starts a rank: \"execvp(all_reduce_perf) failed\"",
		Why:    "the binary is not on the node"},
}

// Classify returns what msg says and the row that said it (nil for
// Unknown). msg is one message or output line; hardware rows win over
// setup rows.
func Classify(msg string) (Kind, *Pattern) {
	for i := range Patterns {
		p := &Patterns[i]
		if p.RE != nil {
			if p.RE.MatchString(strings.TrimSpace(msg)) {
				return p.Kind, p
			}
			continue
		}
		if strings.Contains(msg, p.Text) {
			return p.Kind, p
		}
	}
	return Unknown, nil
}
