// Package chunked checks a compiler stage's errors against expectations
// written in the test programs themselves.
//
// A chunked file holds many small programs, one after the other,
// separated by lines that hold only "---". Each error a program must
// produce is written as a comment on the line the error points at:
//
//	BEGIN { @x = ; } // ERROR "expected expression, found ';'"
//	BEGIN { @x = 1 / 0; @y = $z } // ERROR:14 "division by zero" ERROR `variable \$z .*`
//
// Each expectation is the word ERROR, optionally a colon and the column
// the error must start at, and a regular expression in Go's quoted or
// back-quoted string syntax that must match the whole message; back
// quotes spare the backslashes. One line may hold several. The marker
// is "// ERROR" so that it cannot be taken for an ordinary comment; a
// line where it is malformed stops the test.
//
// A test reads the file with Read, gives each chunk's Source to the stage
// under the name Name, and passes whatever error came back to Check.
// Check compares the whole list: an error that no expectation on its
// line matches is reported as unexpected, an expectation that no error
// matched as missing, both at the line of the chunk file they concern.
// Errors are recognised by the text their Error method gives, which must
// start with "Name:line:column: ", as syntax.Error's does; a list of
// errors is anything with an Unwrap() []error method.
package chunked
