package bpf

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// explainRefusal adds the reason to a load error about a helper xnic does
// not implement, when there is one.
func explainRefusal(err error) error {
	var le *LoadError
	if !errors.As(err, &le) || !errors.Is(err, ErrHelperNotAllowed) {
		return err
	}
	msg := le.Err.Error()
	open := strings.LastIndexByte(msg, '(')
	if open < 0 || !strings.HasSuffix(msg, ")") {
		return err
	}
	id, perr := strconv.Atoi(msg[open+1 : len(msg)-1])
	if perr != nil {
		return err
	}
	if h := helperOf(int64(id)); h != nil && h.why != "" { // helpers_table.go
		why := h.why
		return fmt.Errorf("%w (%s)", err, why)
	}
	return err
}
