package clientconf

// Suggest returns the candidate closest to key by edit distance
// (insertions, deletions, substitutions and transpositions of adjacent
// characters each cost 1), or "" when none is close: the distance must be
// at most 2, or at most a fifth of key's length. Ties go to the earlier
// candidate. Used for "did you mean" hints (task.max -> tasks.max).
func Suggest(key string, candidates []string) string {
	best, bestD := "", -1
	for _, c := range candidates {
		if c == key {
			continue
		}
		d := editDistance(key, c)
		if bestD < 0 || d < bestD {
			best, bestD = c, d
		}
	}
	if bestD < 0 || (bestD > 2 && bestD*5 > len(key)) {
		return ""
	}
	return best
}

// editDistance is the optimal-string-alignment distance between a and b
// (bytes), bounded to keep it cheap on long inputs.
func editDistance(a, b string) int {
	const limit = 256
	if len(a) > limit || len(b) > limit {
		if a == b {
			return 0
		}
		return limit
	}
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
