package gpu

import (
	"fmt"
	"sort"
	"strings"

	"gostachio/kernels/cpu"
)

// StateRows renders an aggregate state as sorted rows of
// "name=type:value" cells: two states are equal as sets of groups (the
// order of groups is not part of a state) when their rows are. A nil
// state has none.
func StateRows(b *cpu.Batch) []string {
	if b == nil {
		return nil
	}
	rows := make([]string, 0, b.Rows)
	for i := 0; i < b.Rows; i++ {
		cells := make([]string, len(b.Names))
		for k, n := range b.Names {
			cells[k] = fmt.Sprintf("%s=%s:%s", n, b.Cols[k].Type, b.Cols[k].Format(i))
		}
		rows = append(rows, strings.Join(cells, " "))
	}
	sort.Strings(rows)
	return rows
}
