package result

import (
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/workloads"
)

// torchbench.py passed inline is 8 KB of command: shortened, it keeps the
// interpreter and the arguments; a short command stays as it is.
func TestShortCommand(t *testing.T) {
	long := "GPUACCEPT_HOSTS=localhost python3 -c '" + workloads.TorchBench + "' --tests gemm --gpus all --dtypes bf16,fp16"
	got := ShortCommand(long)
	assert.Assert(t, len(got) < 400, got)
	assert.Assert(t, strings.HasPrefix(got, "GPUACCEPT_HOSTS=localhost python3 -c '#!/usr/bin/env python3"), got)
	assert.Assert(t, strings.HasSuffix(got, "--tests gemm --gpus all --dtypes bf16,fp16"), got)
	assert.Assert(t, strings.Contains(got, "bytes left out"), got)
	short := "all_reduce_perf -b 8 -e 4G -f 2 -g 2"
	assert.Equal(t, ShortCommand(short), short)
}
