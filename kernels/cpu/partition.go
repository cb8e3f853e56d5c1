package cpu

import (
	"fmt"
	"math"
)

// Partition splits b into parts batches: row i goes to part
// HashColumns(keys)[i] mod parts, so equal keys always share a part, also
// across batches, processes and key widths (an int32 and an int64 key of
// the same value land alike). Rows keep their relative order within a
// part. No keys: every row goes to part 0. parts == 1 returns {b} itself;
// otherwise every part is a new batch (possibly of zero rows, with b's
// columns). Errors: parts < 1, an unknown or unhashable key column.
func Partition(b *Batch, keys []string, parts int) ([]*Batch, error) {
	if b == nil {
		return nil, fmt.Errorf("cpu: Partition of a nil batch")
	}
	if parts < 1 || parts > math.MaxInt32 {
		return nil, fmt.Errorf("cpu: Partition into %d parts", parts)
	}
	if b.Rows >= math.MaxInt32 {
		return nil, fmt.Errorf("cpu: Partition: %d rows is over the int32 row index", b.Rows)
	}
	kc := make([]int, len(keys))
	for i, k := range keys {
		c := b.Col(k)
		if c < 0 {
			_, err := b.Column(k)
			return nil, fmt.Errorf("cpu: partition key: %w", err)
		}
		if err := htCheckKey(b, c, "partition key"); err != nil {
			return nil, err
		}
		kc[i] = c
	}
	if parts == 1 {
		return []*Batch{b}, nil
	}
	for c := range b.Cols {
		if n := b.Cols[c].Len(); n != b.Rows {
			return nil, fmt.Errorf("cpu: Partition: column %s has %d values, batch %d rows", b.Names[c], n, b.Rows)
		}
	}
	hs := HashColumns(b, kc, nil)
	pid := make([]int32, len(hs))
	start := make([]int, parts+1)
	if parts&(parts-1) == 0 {
		mask := uint64(parts - 1)
		for i, h := range hs {
			p := int32(h & mask)
			pid[i] = p
			start[p+1]++
		}
	} else {
		np := uint64(parts)
		for i, h := range hs {
			p := int32(h % np)
			pid[i] = p
			start[p+1]++
		}
	}
	for p := range parts {
		start[p+1] += start[p]
	}
	// Counting sort of row indices by part: stable, so each part's rows
	// stay in input order.
	sel := make([]int32, len(hs))
	pos := append([]int(nil), start[:parts]...)
	for i, p := range pid {
		sel[pos[p]] = int32(i)
		pos[p]++
	}
	out := make([]*Batch, parts)
	for p := range out {
		out[p] = Gather(b, sel[start[p]:start[p+1]])
	}
	return out, nil
}
