package output

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

type keyed32 struct{ key, id int }

func sortInputs() [][]int {
	r := rand.New(rand.NewPCG(17, 0))
	var inputs [][]int
	for _, n := range []int{0, 1, 2, 3, 15, 16, 17, 18, 31, 32, 33, 64, 100, 257, 1000} {
		for _, distinct := range []int{1, 2, 5, n + 1} {
			in := make([]int, n)
			for i := range in {
				in[i] = r.IntN(distinct)
			}
			inputs = append(inputs, in)
		}
		// Sorted, reversed and organ-pipe inputs stress the partitioning.
		asc := make([]int, n)
		for i := range asc {
			asc[i] = i / 3
		}
		desc := slices.Clone(asc)
		slices.Reverse(desc)
		pipe := make([]int, n)
		for i := range pipe {
			pipe[i] = min(i, n-1-i)
		}
		inputs = append(inputs, asc, desc, pipe)
	}
	return inputs
}

// order returns the ids of in after sorting by key with sortFn: equal keys
// show where the algorithm moved them.
func order(in []int, sortFn func([]keyed32, func(a, b *keyed32) bool)) string {
	s := make([]keyed32, len(in))
	for i, k := range in {
		s[i] = keyed32{k, i}
	}
	sortFn(s, func(a, b *keyed32) bool { return a.key < b.key })
	var b strings.Builder
	for _, e := range s {
		fmt.Fprintf(&b, "%d ", e.id)
	}
	return b.String()
}

// TestStdSortMatchesLibstdcxx checks that stdSort and heapSort leave equal
// elements exactly where GCC's std::sort and std::partial_sort leave them.
func TestStdSortMatchesLibstdcxx(t *testing.T) {
	gxx, err := exec.LookPath("g++")
	if err != nil {
		t.Skip("g++ is not installed: cannot ask libstdc++")
	}
	inputs := sortInputs()
	var src strings.Builder
	src.WriteString(`#include <algorithm>
#include <cstdio>
#include <utility>
#include <vector>
static void show(const std::vector<std::pair<int, int>> &v) {
	for (auto &e : v) printf("%d ", e.second);
	printf("\n");
}
static const int keys[] = {`)
	for _, in := range inputs {
		for _, k := range in {
			fmt.Fprintf(&src, "%d,", k)
		}
	}
	src.WriteString("0};\nstatic const int lens[] = {")
	for _, in := range inputs {
		fmt.Fprintf(&src, "%d,", len(in))
	}
	src.WriteString(`};
int main() {
	auto less = [](const std::pair<int, int> &a, const std::pair<int, int> &b) { return a.first < b.first; };
	const int *k = keys;
	for (int n : lens) {
		std::vector<std::pair<int, int>> v;
		for (int i = 0; i < n; i++) v.push_back({k[i], i});
		k += n;
		auto h = v;
		std::sort(v.begin(), v.end(), less);
		show(v);
		std::partial_sort(h.begin(), h.end(), h.end(), less);
		show(h);
	}
	return 0;
}
`)

	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.cc"), []byte(src.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "main")
	if out, err := exec.Command(gxx, "-O1", "-o", bin, filepath.Join(dir, "main.cc")).CombinedOutput(); err != nil {
		t.Fatalf("g++: %v\n%s", err, out)
	}
	want, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	var got strings.Builder
	for _, in := range inputs {
		got.WriteString(order(in, stdSort[keyed32]) + "\n")
		got.WriteString(order(in, heapSort[keyed32]) + "\n")
	}
	diffLines(t, "sort orders against libstdc++", []byte(got.String()), want)
}

func TestStdSortSorts(t *testing.T) {
	for _, in := range sortInputs() {
		s := make([]keyed32, len(in))
		for i, k := range in {
			s[i] = keyed32{k, i}
		}
		stdSort(s, func(a, b *keyed32) bool { return a.key < b.key })
		if !slices.IsSortedFunc(s, func(a, b keyed32) int { return a.key - b.key }) {
			t.Fatalf("stdSort left %v unsorted", s)
		}
	}
}
