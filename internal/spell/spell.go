// Package spell finds the likely intended word behind a misspelt one,
// for the "did you mean" of kinst's messages.
package spell

import "strings"

// Nearest returns the candidate closest to name by edit distance,
// ignoring case, if it is close enough to be a likely typo: fewer edits
// than half of name's length; "" if none is.
func Nearest(name string, candidates []string) string {
	best, bestDist := "", len(name)/2+1
	for _, cand := range candidates {
		if d := Distance(strings.ToLower(name), strings.ToLower(cand), bestDist); d < bestDist {
			best, bestDist = cand, d
		}
	}
	return best
}

// Distance returns the Levenshtein distance between a and b, or limit
// when it is limit or more: a search for the nearest of many words stops
// comparing each as soon as it cannot beat the best so far.
func Distance(a, b string, limit int) int {
	if abs(len(a)-len(b)) >= limit {
		return limit
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		rowMin := cur[0]
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			rowMin = min(rowMin, cur[j])
		}
		if rowMin >= limit {
			return limit
		}
		prev, cur = cur, prev
	}
	return min(prev[len(b)], limit)
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
