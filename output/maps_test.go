package output

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func TestPermute(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for n := range 40 {
		s := make([]int, n)
		for i := range s {
			s[i] = 100 + i
		}
		perm := make([]int32, n)
		for i, p := range rng.Perm(n) {
			perm[i] = int32(p)
		}
		want := make([]int, n)
		for i, p := range perm {
			want[i] = s[p]
		}
		permute(s, perm)
		if !slices.Equal(s, want) {
			t.Errorf("n=%d: permute gave %v, want %v", n, s, want)
		}
	}
}
