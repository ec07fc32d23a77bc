package output

import "strconv"

// ntop renders an address as glibc's inet_ntop does. IPv6 differs from
// net/netip in one case that matters here: an address whose first 96 bits
// are zero is written with a dotted IPv4 tail ("::1.2.3.4"), as RFC 4291's
// deprecated IPv4-compatible form, where netip writes "::102:304".
func ntop(family int64, addr []byte) string {
	switch {
	case family == AFInet && len(addr) >= 4:
		return string(appendIPv4(nil, addr[:4]))
	case family == AFInet6 && len(addr) >= 16:
		return string(appendIPv6(nil, addr[:16]))
	}
	return ""
}

func appendIPv4(b, a []byte) []byte {
	for i, c := range a {
		if i > 0 {
			b = append(b, '.')
		}
		b = strconv.AppendUint(b, uint64(c), 10)
	}
	return b
}

func appendIPv6(b, a []byte) []byte {
	var words [8]uint16
	for i := range words {
		words[i] = uint16(a[2*i])<<8 | uint16(a[2*i+1])
	}
	// The first longest run of two or more zero words becomes "::".
	bestBase, bestLen := -1, 0
	for i := 0; i < 8; {
		if words[i] != 0 {
			i++
			continue
		}
		j := i
		for j < 8 && words[j] == 0 {
			j++
		}
		if j-i > bestLen {
			bestBase, bestLen = i, j-i
		}
		i = j
	}
	if bestLen < 2 {
		bestBase = -1
	}
	for i := 0; i < 8; i++ {
		if bestBase >= 0 && i >= bestBase && i < bestBase+bestLen {
			if i == bestBase {
				b = append(b, ':')
			}
			continue
		}
		if i > 0 {
			b = append(b, ':')
		}
		if i == 6 && bestBase == 0 && (bestLen == 6 || bestLen == 5 && words[5] == 0xffff) {
			return appendIPv4(b, a[12:16])
		}
		b = strconv.AppendUint(b, uint64(words[i]), 16)
	}
	if bestBase >= 0 && bestBase+bestLen == 8 {
		b = append(b, ':')
	}
	return b
}
