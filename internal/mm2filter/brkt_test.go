package mm2filter

import (
	"errors"
	"testing"
)

// TestBrkTRepeatedBadItemReportedOnce: a list that repeats a bad item
// (a copy and paste, "orders(,payments,orders(") reported it once per
// occurrence, the same error twice in one message, as [RegexErrors]; it
// is one error now, a *RegexError like any single bad item.
func TestBrkTRepeatedBadItemReportedOnce(t *testing.T) {
	for _, list := range [][]string{{"orders(", "payments", "orders("}, {"(?<=x)y", "(?<=x)y"}} {
		_, err := New("topics", list, "topics.exclude", nil)
		var re *RegexError
		if !errors.As(err, &re) || re.Regex != list[0] {
			t.Fatalf("%q: %v, want a *RegexError of %q", list, err, list[0])
		}
		if want := re.Error(); err.Error() != want {
			t.Errorf("%q: %q, want the one error %q", list, err, want)
		}
	}
	// Two different bad items stay two errors.
	_, err := New("topics", []string{"orders(", "pay[", "orders("}, "topics.exclude", nil)
	var res RegexErrors
	if !errors.As(err, &res) || len(res) != 2 || res[0].Regex != "orders(" || res[1].Regex != "pay[" {
		t.Errorf("two bad items, one repeated: %v, want RegexErrors of orders( and pay[", err)
	}
}
