package nccltests

import (
	"math"
	"strconv"
)

// parsePow10 holds the powers of ten that float64 represents exactly.
var parsePow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
	1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// parseDigits reports whether b is one or more ASCII digits.
func parseDigits(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// parseUint parses b as a non-negative decimal integer that fits int64.
func parseUint(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 19 {
		return 0, false
	}
	var n uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	if n > math.MaxInt64 {
		return 0, false
	}
	return int64(n), true
}

// parseInt parses b as a decimal integer with an optional sign that fits
// int (and int32, to be the same on every platform).
func parseInt(b []byte) (int, bool) {
	neg := false
	if len(b) > 0 && (b[0] == '-' || b[0] == '+') {
		neg = b[0] == '-'
		b = b[1:]
	}
	if len(b) > 10 {
		return 0, false
	}
	n, ok := parseUint(b)
	if !ok || n > math.MaxInt32 {
		return 0, false
	}
	if neg {
		n = -n
	}
	return int(n), true
}

// parseFloat parses b as a decimal number as printf's %f, %e and %g write
// it ("12484.2", "1.2e+04", "5e-07", "-1"), or as "nan", "-nan", "inf" or
// "-inf". Numbers of at most 15 significant digits without exponent, which
// is what nccl-tests prints, take a fast path that is exact (both operands
// of the division are exact in float64); the rest go to strconv.
func parseFloat(b []byte) (float64, bool) {
	v, _, ok := parseFloatExp(b)
	return v, ok
}

// parseFloatExp is parseFloat that also returns parseExp(b), the exponent
// of the number's last digit, without scanning it twice on the fast path.
func parseFloatExp(b []byte) (float64, int8, bool) {
	i, n := 0, len(b)
	if n == 0 {
		return 0, 0, false
	}
	neg := false
	if b[0] == '-' || b[0] == '+' {
		neg = b[0] == '-'
		i++
	}
	var mant uint64
	digits, frac := 0, 0
	for ; i < n && b[i] >= '0' && b[i] <= '9'; i++ {
		mant = mant*10 + uint64(b[i]-'0')
		digits++
		if digits > 15 {
			return parseFloatSlowExp(b)
		}
	}
	if i < n && b[i] == '.' {
		i++
		for ; i < n && b[i] >= '0' && b[i] <= '9'; i++ {
			mant = mant*10 + uint64(b[i]-'0')
			digits++
			frac++
			if digits > 15 {
				return parseFloatSlowExp(b)
			}
		}
	}
	if i == n {
		if digits == 0 {
			return 0, 0, false
		}
		v := float64(mant) / parsePow10[frac]
		if neg {
			v = -v
		}
		return v, int8(-frac), true
	}
	return parseFloatSlowExp(b)
}

// parseFloatSlowExp is parseFloatSlow with parseExp.
func parseFloatSlowExp(b []byte) (float64, int8, bool) {
	v, ok := parseFloatSlow(b)
	if !ok {
		return 0, 0, false
	}
	return v, parseExp(b), true
}

// parseFloatSlow is parseFloat for exponents, long numbers and nan/inf.
func parseFloatSlow(b []byte) (float64, bool) {
	s := b
	if len(s) > 0 && (s[0] == '-' || s[0] == '+') {
		s = s[1:]
	}
	switch string(s) {
	case "nan", "NaN", "NAN":
		return math.NaN(), true
	case "inf", "Inf", "INF", "infinity":
		if b[0] == '-' {
			return math.Inf(-1), true
		}
		return math.Inf(1), true
	}
	// Allow only [digits][.digits][e[+-]digits], not Go's hex floats and
	// underscores.
	i, n, mant := 0, len(s), 0
	for ; i < n && s[i] >= '0' && s[i] <= '9'; i++ {
		mant++
	}
	if i < n && s[i] == '.' {
		i++
		for ; i < n && s[i] >= '0' && s[i] <= '9'; i++ {
			mant++
		}
	}
	if mant == 0 {
		return 0, false
	}
	if i < n && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < n && (s[i] == '-' || s[i] == '+') {
			i++
		}
		if !parseDigits(s[i:]) {
			return 0, false
		}
		i = n
	}
	if i != n {
		return 0, false
	}
	v, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		// Only range errors get here: v is then ±Inf or 0, which is what
		// the number means.
		if ne, ok := err.(*strconv.NumError); !ok || ne.Err != strconv.ErrRange {
			return 0, false
		}
	}
	return v, true
}

// parseWrong parses a #wrong column ("0", "12", "1e+06" as %6g writes it,
// or "N/A" when validation is off, which gives -1).
func parseWrong(b []byte) (int64, bool) {
	if len(b) == 1 && b[0] == '0' {
		return 0, true
	}
	if string(b) == "N/A" {
		return -1, true
	}
	if n, ok := parseUint(b); ok {
		return n, true
	}
	v, ok := parseFloat(b)
	if !ok || v != v || v < 0 || v >= math.MaxInt64 {
		return 0, false
	}
	return int64(v), true
}

// parseWord reports whether b looks like a name (a type or an operation):
// an ASCII letter followed by letters, digits, '_', '-' or '.'.
func parseWord(b []byte) bool {
	if len(b) == 0 || !(b[0] >= 'a' && b[0] <= 'z' || b[0] >= 'A' && b[0] <= 'Z') {
		return false
	}
	for _, c := range b[1:] {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// parseIsDate reports whether b is a date as -S prints it: "2026-11-30".
func parseIsDate(b []byte) bool {
	return len(b) == 10 && b[4] == '-' && b[7] == '-' &&
		parseDigits(b[0:4]) && parseDigits(b[5:7]) && parseDigits(b[8:10])
}

// parseIsClock reports whether b is a time of day as -S prints it:
// "06:20:11".
func parseIsClock(b []byte) bool {
	return len(b) == 8 && b[2] == ':' && b[5] == ':' &&
		parseDigits(b[0:2]) && parseDigits(b[3:5]) && parseDigits(b[6:8])
}

// parseExp returns the decimal exponent of the last digit of a number as
// printf writes it: -2 for "344.03", 0 for "12484", 3 for "1.2e+04", 6 for
// "1e+06", -7 for "5e-07"; 0 for what is no plain number ("nan", "inf"),
// which carries no rounding. The result is clamped to int8.
func parseExp(b []byte) int8 {
	i, n := 0, len(b)
	if i < n && (b[i] == '-' || b[i] == '+') {
		i++
	}
	for i < n && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	frac := 0
	if i < n && b[i] == '.' {
		i++
		for i < n && b[i] >= '0' && b[i] <= '9' {
			i++
			frac++
		}
	}
	exp := 0
	if i < n && (b[i] == 'e' || b[i] == 'E') {
		i++
		neg := false
		if i < n && (b[i] == '-' || b[i] == '+') {
			neg = b[i] == '-'
			i++
		}
		for ; i < n && b[i] >= '0' && b[i] <= '9' && exp < 1000; i++ {
			exp = exp*10 + int(b[i]-'0')
		}
		if neg {
			exp = -exp
		}
	}
	if i != n {
		return 0
	}
	return int8(max(-127, min(127, exp-frac)))
}
