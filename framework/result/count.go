package result

import "strconv"

// Count renders a count with its noun, singular for one: Count(1, "test")
// is "1 test", Count(3, "test") "3 tests", Count(2, "entry") "2 entries".
// The plural adds "s", or "ies" for a noun ending in a consonant and "y";
// many, when given, is the plural to use instead ("series", "GPUs").
func Count(n int, noun string, many ...string) string {
	return strconv.Itoa(n) + " " + Noun(n, noun, many...)
}

// Noun is the noun of Count without the number: "test" for one, else its
// plural ("tests"), for text that puts words between the two.
func Noun(n int, noun string, many ...string) string {
	switch {
	case n == 1 || n == -1:
		return noun
	case len(many) > 0:
		return many[0]
	case len(noun) > 1 && noun[len(noun)-1] == 'y' && !isVowel(noun[len(noun)-2]):
		return noun[:len(noun)-1] + "ies"
	}
	return noun + "s"
}

func isVowel(b byte) bool {
	switch b {
	case 'a', 'e', 'i', 'o', 'u':
		return true
	}
	return false
}
