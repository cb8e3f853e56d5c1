package repocheck

import (
	"regexp"
	"testing"
)

// processWords matches text about how the work on the project was
// organised (numbered rounds of development, tracker numbers) rather than
// about the project: a reader of the repository cannot know what they
// refer to. Dates and machines of measurements are fine.
var processWords = regexp.MustCompile(`(?i)(first|second|third|[a-z]+th|[0-9]+(st|nd|rd|th)) session|issue #?[0-9]`)

// TestSpeaksOfTheProjectAlone fails on any tracked text file that refers to
// how the work was organised.
func TestSpeaksOfTheProjectAlone(t *testing.T) {
	root := repoRoot(t)
	files := readTracked(t, root, func(string) bool { return true })
	if len(files) < 100 {
		t.Fatalf("found %d tracked text files; expected the whole repository", len(files))
	}
	for f, data := range files {
		for _, loc := range processWords.FindAllIndex(data, -1) {
			t.Errorf("%s:%d: %q", f, lineOf(data, loc[0]), data[loc[0]:loc[1]])
		}
	}
}

func TestProcessWordsPattern(t *testing.T) {
	// The positive cases are spelled in two pieces so that this file
	// does not match the pattern it tests.
	const sess = " session"
	for s, want := range map[string]bool{
		"in the seventeenth" + sess:      true,
		"the twenty-third" + sess + "'s": true,
		"see is" + "sue 9":               true,
		"the 3rd" + sess:                 true,
		"a TCP session":                  false,
		"measured on 2026-11-27, Xeon":   false,
		"an issue with the disk":         false,
	} {
		if got := processWords.MatchString(s); got != want {
			t.Errorf("processWords.MatchString(%q) = %v, want %v", s, got, want)
		}
	}
}
