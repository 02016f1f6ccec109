package workload

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
)

// checkEncoding rejects a trace that is not plain UTF-8 text: a byte-order
// mark or UTF-16 would otherwise surface as a puzzling error about the first
// field.
func checkEncoding(name string, data []byte) error {
	switch {
	case bytes.HasPrefix(data, []byte{0xEF, 0xBB, 0xBF}):
		return fmt.Errorf("%s:1: the trace starts with a UTF-8 byte-order mark; save it as UTF-8 without BOM", name)
	case bytes.HasPrefix(data, []byte{0xFF, 0xFE}), bytes.HasPrefix(data, []byte{0xFE, 0xFF}):
		return fmt.Errorf("%s:1: the trace is UTF-16 encoded; save it as UTF-8", name)
	case len(data) >= 4 && (text(data[0]) && data[1] == 0 && text(data[2]) && data[3] == 0 || data[0] == 0 && text(data[1]) && data[2] == 0 && text(data[3])):
		return fmt.Errorf("%s:1: the trace looks UTF-16 encoded (NUL bytes); save it as UTF-8", name)
	}
	return nil
}

// scanErr is the error of a trace scanner that stopped at line.
func scanErr(name string, line int, err error) error {
	if errors.Is(err, bufio.ErrTooLong) {
		return fmt.Errorf("%s:%d: line longer than the limit of %d MiB", name, line, maxLine>>20)
	}
	return fmt.Errorf("%s:%d: %v", name, line, err)
}

// text reports whether c is printable ASCII or a line break.
func text(c byte) bool { return c >= 0x20 && c < 0x7f || c == '\n' || c == '\r' || c == '\t' }
