// Package preprocess is the C preprocessor kinst runs over program text
// before parsing it, as bpftrace runs clang's.
//
// It handles #include in both forms, object-like and function-like
// #define (with # and ##, and variadic macros), #undef, the conditional
// directives with defined() and integer constant expressions, comments
// and line continuations. Headers found in the system include path
// contribute their macros only: kinst takes kernel types from BTF, so the
// C declarations of /usr/include must not reach the program. Headers
// found next to the program or in -I directories are included in full.
// A system header that is not installed is no error: kinst goes on with
// BTF and says so in one warning.
//
// The output is a syntax.File whose positions resolve to the files and
// lines the text was written in, so that errors found after
// preprocessing point into the program, its headers or the #define a
// token came from. A program without directives is returned as it is,
// at the cost of one scan for a '#' at the start of a line.
//
// With Config.CacheDir set, what an #include of the program's does when
// it makes no text (glibc's <sys/socket.h> reads some twenty files to
// define a thousand macros) is kept on disk and reused by later runs
// whose macros, search path and files are the same: see cache.go for the
// key and how stale, damaged and concurrent entries are handled.
package preprocess
