// Package workloads holds the scripts gpuaccept's plugins run on GPU nodes,
// embedded so that a plan can pass a script inline (python -c) and the
// nodes need nothing of gpuaccept installed.
package workloads

import _ "embed"

// TorchBench is the source of torchbench.py: GEMM TFLOPS, HBM copy/triad
// GB/s, pinned host↔device GB/s and GPU↔GPU GB/s measured with PyTorch
// (CUDA or ROCm builds), printed as one JSON object per line on stdout,
// each with the node's "host". Its docstring lists the line kinds and
// options; plugins/internal/torchbench runs and parses it.
//
//go:embed torchbench.py
var TorchBench string

// TrainBench is the source of trainbench.py: training throughput of a
// Qwen2.5-shaped decoder (tokens/s, model TFLOP/s, loss per GPU and step),
// printed as one JSON object per line on stdout, each with the node's
// "host". Its docstring gives the line kinds, the FLOP formula and the
// options; plugins/train runs and parses it.
//
//go:embed trainbench.py
var TrainBench string
