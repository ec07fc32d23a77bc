// Package cfg builds the control-flow graph of a function's x86-64
// machine code and works out how often its blocks and edges ran from
// counts measured at some of them.
//
// [Build] decodes a function and the parts the compiler outlined from
// it into basic blocks joined by edges. [Solve] applies flow
// conservation to the counts of the blocks that were probed, and
// [ProposeLayout] orders the blocks so that the most frequent
// transitions fall through. kinst blocks is their user.
package cfg
