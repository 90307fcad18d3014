package nccltests

import (
	"testing"

	"gotest.tools/v3/assert"
)

// The precision of every number form nccl-tests prints (getFloatStr's
// %.2f, %.1f, %.0f, %.1e and %.0e; %g of #wrong; %5.0le of the old error
// column), as the tokens of the test data show them.
func TestParseFloatExp(t *testing.T) {
	tests := []struct {
		tok  string
		v    float64
		exp  int8
		half float64
	}{
		{"344.03", 344.03, -2, 0.005},
		{"12484.2", 12484.2, -1, 0.05},
		{"12484", 12484, 0, 0.5},
		{"1.2e+04", 12000, 3, 500},
		{"1e+06", 1e6, 6, 5e5},
		{"5e-07", 5e-7, -7, 5e-8},
		{"0e+00", 0, 0, 0.5},
		{"-1", -1, 0, 0.5},
		{"0.00", 0, -2, 0.005},
		{"1234567890123456.5", 1234567890123456.5, -1, 0.05}, // past the fast path
	}
	for _, tc := range tests {
		v, exp, ok := parseFloatExp([]byte(tc.tok))
		assert.Assert(t, ok, tc.tok)
		assert.Equal(t, v, tc.v, tc.tok)
		assert.Equal(t, exp, tc.exp, tc.tok)
		assert.Equal(t, exp, parseExp([]byte(tc.tok)), tc.tok)
		assert.Equal(t, Prec{Known: true}.HalfUnit(exp), tc.half, tc.tok)
	}
	for _, bad := range []string{"", "1.2.3", "e5", "0x10", "1_000"} {
		_, _, ok := parseFloatExp([]byte(bad))
		assert.Assert(t, !ok, bad)
	}
	// Unrounded numbers (JSON): half a unit of %lf's sixth decimal.
	assert.Equal(t, Prec{}.HalfUnit(6), 5e-7)
}
