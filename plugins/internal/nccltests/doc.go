// Package nccltests reads the outputs of the nccl-tests family (NVIDIA's
// nccl-tests and AMD's rccl-tests, which print the same text layout): the
// text a run prints (ParseText), nccl-tests' -J JSON file (ParseJSON), and
// turns one step's outputs into metrics, correctness checks and
// diagnostics (Result); it also checks the parameters the family shares and
// plans their sweep command line (SweepParams, Sweep). The nccl and rccl
// plugins share it; each keeps its own parameters and its tool's quirks.
package nccltests
