package main

import (
	"math"
	"testing"
)

func TestDescribeMemoryLimit(t *testing.T) {
	for _, tc := range []struct {
		in   int64
		want string
	}{
		{math.MaxInt64, "none"},
		{180 << 20, "180 MiB"},
		{3 << 29, "1536 MiB"},
		{(1 << 20) + (1 << 19), "1.5 MiB"},
	} {
		if got := describeMemoryLimit(tc.in); got != tc.want {
			t.Errorf("describeMemoryLimit(%d) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
