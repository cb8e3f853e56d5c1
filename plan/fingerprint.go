package plan

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
)

// Fingerprint identifies the work an operator does per row: a 16-digit hex
// FNV-1a 64 hash of its kind, input and output columns, keys, expression
// text and limit. Two operators with the same fingerprint evaluate the
// same expressions on the same columns, so a cost measured for one (a
// calibration micro-benchmark of a plan's filter) prices the other. It
// leaves out the estimates (selectivity, groups, widths) and the build a
// probe refers to, which change with the data's scale and the plan's
// shape, not with the per-row work. The fingerprint is stable across
// processes and versions as long as these fields render the same.
func (op *Op) Fingerprint() string {
	var b strings.Builder
	b.WriteString(op.Kind.String())
	for _, part := range [][]string{op.In, op.Out, op.Keys} {
		b.WriteByte('|')
		b.WriteString(strings.Join(part, ","))
	}
	b.WriteByte('|')
	if op.Expr != nil {
		b.WriteString(op.Expr.String())
	}
	b.WriteByte('|')
	b.WriteString(strconv.Itoa(op.Limit))
	h := fnv.New64a()
	h.Write([]byte(b.String()))
	return fmt.Sprintf("%016x", h.Sum64())
}
