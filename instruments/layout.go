package instruments

import (
	"fmt"
	"io"
	"math"
	"strings"

	"kinst.dev/kinst/instruments/internal/cfg"
)

// percent is part of whole in whole percents, rounded to the nearest.
func percent(part, whole uint64) int {
	return int(math.Round(100 * float64(part) / float64(whole)))
}

// writeLayout prints the proposed layout: the fall-through line, the cold blocks
// and the proposed order with each block's count.
func writeLayout(w io.Writer, r *blockReport) error {
	g, f, l := r.g, r.f, r.layout
	var sb strings.Builder
	if l.Transitions == 0 {
		sb.WriteString("fall-through: no transitions between blocks ran\n")
	} else {
		fmt.Fprintf(&sb, "fall-through: current %d%%, proposed %d%%\n", percent(l.Current, l.Transitions), percent(l.Proposed, l.Transitions))
	}
	fmt.Fprintf(&sb, "of %d transitions between blocks", l.Transitions)
	if l.Unknown > 0 {
		fmt.Fprintf(&sb, "; %d edges of unknown count left out", l.Unknown)
	}
	sb.WriteString("\n")
	labels := make([]string, len(l.Cold))
	for i, b := range l.Cold {
		labels[i] = r.blockName(b)
	}
	fmt.Fprintf(&sb, "cold: %d of %d blocks never ran", len(l.Cold), len(g.Blocks))
	if len(labels) > 0 {
		sb.WriteString(": " + strings.Join(labels, " "))
	}
	sb.WriteString("\nproposed order:\n")
	width := len("count")
	for _, b := range l.Order {
		width = max(width, len(f.Blocks[b.Index].String()))
	}
	fmt.Fprintf(&sb, "%*s  block\n", width, "count")
	for i, b := range l.Order {
		if i == len(l.Order)-len(l.Cold) && i > 0 {
			sb.WriteString("\n") // the cold part
		}
		fmt.Fprintf(&sb, "%*s  %s\n", width, f.Blocks[b.Index].String(), r.blockName(b))
	}
	_, err := io.WriteString(w, sb.String())
	return err
}

// blockName is a block's offset in the function, or its label in an
// outlined part.
func (r *blockReport) blockName(b *cfg.Block) string {
	if b.Region == 0 {
		return fmt.Sprintf("+%#x", r.g.Offset(b))
	}
	return r.g.Label(b)
}
