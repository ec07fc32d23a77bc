package preprocess

import "kinst.dev/kinst/syntax"

// output collects the preprocessed text and where each run of it came
// from.
type output struct {
	buf   []byte
	spans []syntax.Span
	prev  token
	any   bool
}

// emit appends text tokens. Tokens read in place keep the bytes between
// them (white space and comments), so that a program without macros
// comes out with its columns intact; other tokens get a space where
// they had one or where they would otherwise run together.
func (p *pp) emit(toks []token) {
	o := &p.out
	for _, t := range toks {
		if o.any {
			pr := o.prev
			switch {
			case !pr.gen && !t.gen && pr.src == t.src && t.idx == pr.idx+1:
				for _, c := range t.src.text[pr.end:t.off] {
					if c == '\\' {
						c = ' ' // a line continuation, which the parser would not take
					}
					o.buf = append(o.buf, c)
				}
			case t.bol:
				o.buf = append(o.buf, '\n')
			case t.space || joins(pr.text, t.text):
				o.buf = append(o.buf, ' ')
			}
		}
		at := len(o.buf)
		if n := len(o.spans); n == 0 || o.spans[n-1].Orig != t.src.file || o.spans[n-1].OrigOff+at-o.spans[n-1].Off != int(t.off) {
			o.spans = append(o.spans, syntax.Span{Off: at, Orig: t.src.file, OrigOff: int(t.off)})
		}
		o.buf = append(o.buf, t.text...)
		o.prev, o.any = t, true
	}
}

// joins reports whether two tokens written without a space between them
// would read as something else.
func joins(a, b string) bool {
	if a == "" || b == "" {
		return false
	}
	x, y := a[len(a)-1], b[0]
	if isIdent(x) || x == '.' {
		return isIdent(y) || y == '.'
	}
	const ops = "+-*/%<>=!&|^:#."
	for i := 0; i < len(ops); i++ {
		if x == ops[i] {
			for j := 0; j < len(ops); j++ {
				if y == ops[j] {
					return true
				}
			}
		}
	}
	return false
}
