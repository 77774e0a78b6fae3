package api

// CategoryMessage is the field error of a category that is neither (CONTRACT §15).
const CategoryMessage = "must be transactional or promotional"

// ParseCategory reads a send's or campaign's category: promotional reports whether it is
// marketing (opt-out text appended, held in quiet hours); ok is false for anything but
// "transactional" or "promotional".
func ParseCategory(s string) (promotional, ok bool) {
	switch s {
	case "transactional":
		return false, true
	case "promotional":
		return true, true
	}
	return false, false
}

// CategoryOf names a send's or campaign's category.
func CategoryOf(promotional bool) string {
	if promotional {
		return "promotional"
	}
	return "transactional"
}
