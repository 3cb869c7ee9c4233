package testcluster

import "testing"

// TestSuffixesNeverReadAlike: the suffix of names on shared real brokers
// was the milliseconds unpadded, then the sequence number, so that
// 20708 then 7001 and 207087 then 1 both gave "207087001": the checkpoint
// package's test created a topic the mirror package's, running beside it,
// had just created (TOPIC_ALREADY_EXISTS in a real run, stop 46). The
// milliseconds are zero-padded to 6 digits now.
func TestSuffixesNeverReadAlike(t *testing.T) {
	for _, tc := range []struct {
		ms, n int64
		want  string
	}{
		{20708, 7001, "0207087001"},
		{207087, 1, "207087001"},
		{1_700_000_000_005, 42, "000005042"},
		{999_999, 1000, "9999991000"},
	} {
		if got := suffixOf(tc.ms, tc.n); got != tc.want {
			t.Errorf("suffixOf(%d, %d) = %q, want %q", tc.ms, tc.n, got, tc.want)
		}
	}
	seen := map[string][2]int64{}
	for ms := int64(0); ms < 3000; ms += 7 {
		for n := int64(1); n < 3000; n += 13 {
			s := suffixOf(ms, n)
			if prev, dup := seen[s]; dup {
				t.Fatalf("suffixOf(%d, %d) = suffixOf(%d, %d) = %q", ms, n, prev[0], prev[1], s)
			}
			seen[s] = [2]int64{ms, n}
		}
	}
}
