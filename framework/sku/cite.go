package sku

import "regexp"

// datasheetCitation is what a ceiling's source names: a vendor datasheet,
// data sheet, product brief, specifications or product page, a white
// paper, a seed, or a public page by its address.
var datasheetCitation = regexp.MustCompile(`(?i)datasheet|data sheet|product brief|specifications|product page|white paper|\bseed 0\d\d\b|https://`)

// measurementCitation is what else a reference entry's source may name to
// be read again: a GitHub issue, a repository file at a commit, a seed's
// file, or a recording kept under testdata/.
var measurementCitation = regexp.MustCompile(`(?i)\bissue #?\d+|\b[\w.-]+/[\w.-]+@[0-9a-f]{7,40}\b|\bseeds?/|testdata/`)

// CitesDatasheet says a ceiling's source names where its figure is
// published (datasheetCitation).
func CitesDatasheet(source string) bool { return datasheetCitation.MatchString(source) }

// CitesMeasurement says a reference entry's source names where its number
// can be read again: a datasheet or page (CitesDatasheet), an issue, a
// repository file at a commit, a seed or a recording. A reference judges
// other sites' hardware on its authority, so "a public page" is not
// enough (validate refuses it).
func CitesMeasurement(source string) bool {
	return datasheetCitation.MatchString(source) || measurementCitation.MatchString(source)
}
