package toolfail

import "testing"

// Real messages, each as its tool printed it, and what it says.
func TestClassify(t *testing.T) {
	for _, c := range []struct {
		src, msg string
		want     Kind
	}{
		{"NVIDIA/nccl-tests#30", "458398: Test CUDA failure common.cu:730 'no CUDA-capable device is detected'", Setup},
		{"NVIDIA/nccl-tests#12", "Cuda failure common.cu:891 'CUDA driver version is insufficient for CUDA runtime version'", Setup},
		{"NVIDIA/nccl-tests#85", "./build/all_reduce_perf: error while loading shared libraries: libnccl.so.2: cannot open shared object file: No such file or directory", Setup},
		{"Genesis-Embodied-AI/quadrants#766", "CUDA Error CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected while calling init (cuInit)", Setup},
		{"ROCm/hip#3910", `checkHipErrors() HIP API error = 0100 "no ROCm-capable device is detected" from file <C:\home\runner\_work\rockrel\rockrel\rocm-systems\projects\hip-tests\samples\1_Utils\hipInfo\hipInfo.cpp>, line 181.`, Setup},
		{"NVIDIA/nvidia-docker#498", `CUDA error at D:/Bld/rel/gpgpu/toolkit/r8.0/demo_suite/bandwidthTest/bandwidthTest.cu:255 code=35(cudaErrorInsufficientDriver) "cudaSetDevice(currentDevice)"`, Setup},
		{"workloads/torchbench.py, recorded (testdata/field/torchbench/no-torch-gemm)", "import torch: No module named 'torch'", Setup},
		{"recorded: python3 -c 'import torch' without torch", "ModuleNotFoundError: No module named 'torch'", Setup},
		{"testdata/recordings/h200x1-2026-12-01/torchbench/no-gpu.jsonl", "torch sees no GPU (torch.cuda.is_available() is False)", Setup},
		{"recorded (testdata/field/torchbench/bash-python-command-not-found-hbm)", "bash: line 1: nosuchpython3: command not found", Setup},
		{"recorded (testdata/field/torchbench/python-cant-open-script-gemm)", "/root/.pyenv/versions/3.11.7/bin/python3: can't open file '/opt/torchbench.py': [Errno 2] No such file or directory", Setup},
		{"vllm-project/vllm#5222", "RuntimeError: CUDA error: uncorrectable ECC error encountered", Hardware},
		{"nagadit/DeepFaceLab_Linux#89", "F tensorflow/stream_executor/lib/statusor.cc:34] Attempting to fetch value instead of handling error Internal: failed initializing StreamExecutor for CUDA device ordinal 0: Internal: failed call to cuDevicePrimaryCtxRetain: CUDA_ERROR_ECC_UNCORRECTABLE: uncorrectable ECC error encountered", Hardware},
		// A kernel's bug as often as the device's (NVIDIA/nccl-tests#355).
		{"NVIDIA/nccl-tests#355", "node0: Test CUDA failure common.cu:389 'an illegal memory access was encountered'", Unknown},
		// NCCL INFO lines of healthy runs name missing optional plugins:
		// no setup error.
		{"NVIDIA/nccl#1812", "paraai-n32-h-01-agent-18:749452:749452 [0] NCCL INFO NET/Plugin : dlerror=libnccl-net.so: cannot open shared object file: No such file or directory No plugin found (libnccl-net.so), using internal implementation", Unknown},
		{"NVIDIA/nccl-tests#12", "misc/ibvwrap.cu:60 WARN Failed to open libibverbs.so[.1]", Unknown},
	} {
		got, p := Classify(c.msg)
		if got != c.want {
			t.Errorf("%s: %q is %s, want %s", c.src, c.msg, got, c.want)
		}
		if (p == nil) != (got == Unknown) {
			t.Errorf("%s: pattern %v for kind %s", c.src, p, got)
		}
	}
}

// Every row says what it is and where it comes from.
func TestPatternsDocumented(t *testing.T) {
	for _, p := range Patterns {
		if p.Text == "" || p.Source == "" || p.Why == "" || p.Kind == Unknown {
			t.Errorf("row %+v lacks its text, source, reason or kind", p)
		}
	}
}
