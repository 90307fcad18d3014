package hostlink

import (
	"errors"

	"github.com/gpuaccept/gpuaccept/framework/result"
)

// Temporary stand-ins for the nvbandwidth and TransferBench parsers,
// which another branch adds in nvbandwidth.go and transferbench.go; the
// lead removes this file at the merge.

func sniffNvbandwidth(head []byte) bool { return false }

func parseNvbandwidth(path string) (result.Parsed, error) {
	return result.Parsed{}, errors.New("nvbandwidth parser: not in this branch")
}

func sniffTransferBench(head []byte) bool { return false }

func parseTransferBench(path string) (result.Parsed, error) {
	return result.Parsed{}, errors.New("TransferBench parser: not in this branch")
}
