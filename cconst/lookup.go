package cconst

import "sort"

// generated looks name up in the generated table.
func generated(name string) (int64, bool) {
	i := sort.SearchStrings(tableNames[:], name)
	if i < len(tableNames) && tableNames[i] == name {
		return tableValues[i], true
	}
	return 0, false
}
