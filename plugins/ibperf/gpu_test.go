package ibperf

import (
	"regexp"
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/result"
)

// field is the field corpus: real outputs with their sources in each
// folder's case.yaml (testdata/field/README.md).
const field = "../../testdata/field/perftest/"

// Every form perftest has printed for buffers in GPU memory shows a
// GPUDirect run, with the GPU it names: ROCm's "Using ROCm Device" and
// "Use ROCm memory : ON"; CUDA, which never printed a "Use CUDA memory"
// line, by the GPU it picks ("There are 4 devices supporting CUDA, picking
// first..." of 2018, "Picking device No. 3" since 2020), the
// "[pid = N, dev = N] device name = [...]" line of every version, and its
// buffer ("cuMemAlloc() of a N bytes GPU buffer" until 2023, "allocated GPU
// buffer of a N address at P for type CUDA_MEM_DEVICE" and DMA-BUF since).
// Host-memory runs show none of them.
func TestGPUForms(t *testing.T) {
	for _, c := range []struct {
		file    string
		gpu     string
		id      int
		mem     bool
		memType string
		line    int // first GPU line
	}{
		{seed + "ibperf.write_bw_gdr/client.0.log", "AMD Instinct MI355X", 1, true, "", 3},
		{field + "amd-mi355x-write-bw-gdr-rocm-mib-unidir/client.0.log", "AMD Instinct MI355X", 0, true, "", 5},
		{issues + "perftest-pr21-write-bw-cuda-v100-server.txt", "Tesla V100-SXM2-32GB", 0, true, "", 7},
		{issues + "perftest-issue241-write-bw-cuda-a30-server.txt", "NVIDIA A30", 0, true, "", 13},
		{field + "moc-h100-cx7-write-bw-gdr-far-gpu/server.0.log", "NVIDIA H100 80GB HBM3", 3, true, "CUDA_MEM_DEVICE", 13},
		{field + "moc-h100-cx7-write-bw-gdr-far-gpu/client.0.log", "NVIDIA H100 80GB HBM3", 3, true, "CUDA_MEM_DEVICE", 9},
		{field + "moc-h100-cx7-write-bw-gdr-4-rails-gpu0/client.2.log", "NVIDIA H100 80GB HBM3", 0, true, "CUDA_MEM_DEVICE", 9},
		{seed + "ibperf.write_bw/client.0.log", "", -1, false, "", 0},
		{field + "rocm-docs-d2d-write-bw-bidir-no-rocm-memory/client.0.log", "", -1, false, "", 0},
		{field + "moc-h100-cx7-read-bw-host/client.0.log", "", -1, false, "", 0},
	} {
		t.Run(strings.TrimPrefix(c.file, "../../testdata/"), func(t *testing.T) {
			o := parseFile(t, c.file)
			assert.Equal(t, o.GPU, c.gpu)
			assert.Equal(t, o.GPUID, c.id)
			assert.Equal(t, o.GPUMemory, c.mem)
			assert.Equal(t, o.GPUMemType, c.memType)
			assert.Equal(t, o.GPULine, c.line)
			assert.Equal(t, len(o.Errors), 0, "%+v", o.Errors)
		})
	}
}

// GPUDirect runs of a CUDA build that prints no "Use ... memory" line
// (field corpus, Mass Open Cloud H100 + ConnectX-7): the GPU memory check
// holds, the GPU they name becomes Info gpu for the SKU's GPU check, and
// the GPU chosen far from the NIC still fails the pair balance.
func TestGDRCUDAFieldRuns(t *testing.T) {
	far := field + "moc-h100-cx7-write-bw-gdr-far-gpu/"
	p := parseTest(t, "write_bw_gdr", map[string]string{"pairs": "mlx5_2:mlx5_2", "gdr": "cuda_dmabuf", "gpus": "3", "bidirectional": "false", "out_json": "false"},
		far+"server.0.log", far+"client.0.log")
	assert.Equal(t, p.Error, "")
	assert.Equal(t, p.Info["gpu"], "NVIDIA H100 80GB HBM3")
	assert.Equal(t, metricAt(p, "bw_avg", 8<<20), 105.03)
	assert.Equal(t, len(p.Checks), 2)
	for _, ch := range p.Checks {
		assert.Assert(t, ch.OK, "%+v", ch)
	}

	rails := field + "moc-h100-cx7-write-bw-gdr-4-rails-gpu0/"
	var logs []string
	for _, n := range []string{"0", "1", "2", "3"} {
		logs = append(logs, rails+"server."+n+".log", rails+"client."+n+".log")
	}
	p = parseTest(t, "write_bw_gdr", nil, logs...)
	assert.Equal(t, p.Error, "")
	assert.Equal(t, p.Info["gpu"], "NVIDIA H100 80GB HBM3")
	gpuChecks, balance := 0, result.Check{}
	for _, ch := range p.Checks {
		if strings.HasPrefix(ch.Name, "GPU memory ") {
			gpuChecks++
			assert.Assert(t, ch.OK, "%+v", ch)
		}
		if ch.Name == "pair balance" {
			balance = ch
		}
	}
	assert.Equal(t, gpuChecks, 8, "both sides of 4 pairs")
	assert.Assert(t, !balance.OK && strings.Contains(balance.Message, "mlx5_4:mlx5_4 110.8 Gb/s, mlx5_5:mlx5_5 105.1 Gb/s"), "%+v", balance)
}

// The same outputs judged as a host-memory test: they used GPU memory,
// and the check says which line shows it.
func TestHostTestOnGPUMemory(t *testing.T) {
	far := field + "moc-h100-cx7-write-bw-gdr-far-gpu/"
	p := parseTest(t, "write_bw", nil, far+"server.0.log", far+"client.0.log")
	var msgs []string
	for _, ch := range p.Checks {
		if !ch.OK {
			msgs = append(msgs, ch.Name+": "+ch.Message)
		}
	}
	assert.DeepEqual(t, msgs, []string{
		"GPU memory mlx5_2:mlx5_2 server: server.0 used GPU memory in a host-memory test (server.0.log:13)",
		"GPU memory mlx5_2:mlx5_2 client: client.0 used GPU memory in a host-memory test (client.0.log:9)",
	})
}

// --cuda_mem_type=4 puts a CUDA run's buffers in host memory: perftest
// still initialises the GPU and names it, but allocates with memalign
// ("Host allocation selected, ...", "for type CUDA_MEM_MALLOC" in
// cuda_memory_allocate_buffer, src/cuda_memory.c). Made from the far-GPU
// client by replacing its DMA-BUF and CUDA_MEM_DEVICE allocation lines
// with those two.
func TestCUDAMallocIsHostMemory(t *testing.T) {
	far := field + "moc-h100-cx7-write-bw-gdr-far-gpu/"
	alloc := regexp.MustCompile(`(?m)^using DMA-BUF for GPU buffer.*\nallocated GPU buffer of a 134217728 address at (\S+) for type CUDA_MEM_DEVICE$`)
	cli := edited(t, far+"client.0.log", "client.0.log", func(s string) string {
		return alloc.ReplaceAllString(s, "Host allocation selected, calling memalign allocator for 134217728 bytes with 4096 page size\nallocated GPU buffer of a 134217728 address at $1 for type CUDA_MEM_MALLOC")
	})
	o := parseFile(t, cli)
	assert.Equal(t, o.GPU, "NVIDIA H100 80GB HBM3", "the GPU is still named")
	assert.Equal(t, o.GPUMemType, cudaMalloc)
	assert.Assert(t, !o.GPUMemory)
	p := parseTest(t, "write_bw_gdr", map[string]string{"pairs": "mlx5_2:mlx5_2", "gdr": "cuda", "gpus": "3", "bidirectional": "false", "out_json": "false"},
		far+"server.0.log", cli)
	var failed []string
	for _, ch := range p.Checks {
		if !ch.OK {
			failed = append(failed, ch.Name+": "+ch.Message)
		}
	}
	assert.DeepEqual(t, failed, []string{"GPU memory mlx5_2:mlx5_2 client: client.0 used host memory: its CUDA buffers are CUDA_MEM_MALLOC (--cuda_mem_type=4), not a GPUDirect RDMA run"})
}
