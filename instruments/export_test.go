package instruments

// FunctionCFG lets the external tests read a kernel function's graph.
var FunctionCFG = functionCFG
