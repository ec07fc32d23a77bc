package output

import "math/bits"

// stdSort sorts s as GCC's libstdc++ std::sort does: introsort with a
// median-of-three pivot, a heapsort fallback past 2*log2(n) levels, and a
// final insertion sort over runs of 16. It is not stable, and bpftrace
// 0.17 prints entries in exactly the order it leaves equal elements in,
// so reproducing its moves is the only way to print ties as 0.17 does.
func stdSort[T any](s []T, less func(a, b *T) bool) {
	if len(s) < 2 {
		return
	}
	introsortLoop(s, 0, len(s), 2*(bits.Len(uint(len(s)))-1), less)
	finalInsertionSort(s, 0, len(s), less)
}

const sortThreshold = 16

func introsortLoop[T any](s []T, first, last, depth int, less func(a, b *T) bool) {
	for last-first > sortThreshold {
		if depth == 0 {
			heapSort(s[first:last], less)
			return
		}
		depth--
		cut := partitionPivot(s, first, last, less)
		introsortLoop(s, cut, last, depth, less)
		last = cut
	}
}

func partitionPivot[T any](s []T, first, last int, less func(a, b *T) bool) int {
	mid := first + (last-first)/2
	moveMedianToFirst(s, first, first+1, mid, last-1, less)
	return unguardedPartition(s, first+1, last, first, less)
}

func moveMedianToFirst[T any](s []T, result, a, b, c int, less func(a, b *T) bool) {
	switch {
	case less(&s[a], &s[b]):
		switch {
		case less(&s[b], &s[c]):
			s[result], s[b] = s[b], s[result]
		case less(&s[a], &s[c]):
			s[result], s[c] = s[c], s[result]
		default:
			s[result], s[a] = s[a], s[result]
		}
	case less(&s[a], &s[c]):
		s[result], s[a] = s[a], s[result]
	case less(&s[b], &s[c]):
		s[result], s[c] = s[c], s[result]
	default:
		s[result], s[b] = s[b], s[result]
	}
}

func unguardedPartition[T any](s []T, first, last, pivot int, less func(a, b *T) bool) int {
	for {
		for less(&s[first], &s[pivot]) {
			first++
		}
		last--
		for less(&s[pivot], &s[last]) {
			last--
		}
		if first >= last {
			return first
		}
		s[first], s[last] = s[last], s[first]
		first++
	}
}

func finalInsertionSort[T any](s []T, first, last int, less func(a, b *T) bool) {
	if last-first > sortThreshold {
		insertionSort(s, first, first+sortThreshold, less)
		for i := first + sortThreshold; i < last; i++ {
			unguardedLinearInsert(s, i, less)
		}
		return
	}
	insertionSort(s, first, last, less)
}

func insertionSort[T any](s []T, first, last int, less func(a, b *T) bool) {
	if first == last {
		return
	}
	for i := first + 1; i < last; i++ {
		if less(&s[i], &s[first]) {
			v := s[i]
			copy(s[first+1:i+1], s[first:i])
			s[first] = v
		} else {
			unguardedLinearInsert(s, i, less)
		}
	}
}

func unguardedLinearInsert[T any](s []T, last int, less func(a, b *T) bool) {
	v := s[last]
	next := last - 1
	for less(&v, &s[next]) {
		s[last] = s[next]
		last = next
		next--
	}
	s[last] = v
}

// heapSort is libstdc++'s partial_sort over the whole range: make_heap,
// then sort_heap.
func heapSort[T any](s []T, less func(a, b *T) bool) {
	n := len(s)
	if n < 2 {
		return
	}
	for parent := (n - 2) / 2; ; parent-- {
		adjustHeap(s, parent, n, s[parent], less)
		if parent == 0 {
			break
		}
	}
	for last := n - 1; last > 0; last-- {
		v := s[last]
		s[last] = s[0]
		adjustHeap(s, 0, last, v, less)
	}
}

func adjustHeap[T any](s []T, hole, n int, v T, less func(a, b *T) bool) {
	top := hole
	child := hole
	for child < (n-1)/2 {
		child = 2 * (child + 1)
		if less(&s[child], &s[child-1]) {
			child--
		}
		s[hole] = s[child]
		hole = child
	}
	if n&1 == 0 && child == (n-2)/2 {
		child = 2 * (child + 1)
		s[hole] = s[child-1]
		hole = child - 1
	}
	// push_heap
	parent := (hole - 1) / 2
	for hole > top && less(&s[parent], &v) {
		s[hole] = s[parent]
		hole = parent
		parent = (hole - 1) / 2
	}
	s[hole] = v
}
