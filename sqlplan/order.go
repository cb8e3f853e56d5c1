package sqlplan

import "math"

// orderChildren orders the subtrees joined to root (children, sorted by
// their reduction red) by the estimated work of the joins: the rows
// probed into each subtree's hash table plus buildCost per row built.
// A subtree whose hash table restricts the keys of a relation of a
// later subtree (a transfer: that relation semi-joins the table right
// after its scan) shrinks that subtree's build and the rows it keeps, so
// building it first can pay for the rows it probes earlier. Without
// transfers the sorted order is the cheapest and is kept.
func (l *lowering) orderChildren(root *rel, rs []*rel, children []*rel, parent map[*rel]*rel, red map[*rel]float64) []*rel {
	n := len(children)
	if n < 2 || n > maxOrdered {
		return children
	}
	subs := make([][]*rel, n)
	size := make([]float64, n)
	for i, c := range children {
		subs[i] = subtreeOf(c, rs, parent)
		size[i] = l.joinRows(subs[i])
	}
	// offer[i][j]: the share of subtree j's rows that subtree i's hash
	// tables keep through transfers.
	offer := make([][]float64, n)
	any := false
	for i := range children {
		offer[i] = make([]float64, n)
		for j := range children {
			offer[i][j] = 1
			if i != j {
				offer[i][j] = l.transferOffer(subs[i], subs[j])
				any = any || offer[i][j] < 1
			}
		}
	}
	if !any {
		return children
	}
	cost := func(order []int) float64 {
		rows, c := l.rows[root], 0.0
		for i, x := range order {
			t := 1.0
			for _, y := range order[:i] {
				t *= offer[y][x]
			}
			c += rows + buildCost*size[x]*t
			rows *= red[children[x]] * t
		}
		return c
	}
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	best := append([]int(nil), order...)
	bestCost := cost(order)
	// Every permutation (Heap's algorithm); a cheaper one replaces the
	// sorted order only by more than rounding.
	var permute func(k int)
	permute = func(k int) {
		if k == 1 {
			if c := cost(order); c < bestCost*(1-1e-9) {
				best, bestCost = append(best[:0], order...), c
			}
			return
		}
		for i := 0; i < k-1; i++ {
			permute(k - 1)
			if k%2 == 0 {
				order[i], order[k-1] = order[k-1], order[i]
			} else {
				order[0], order[k-1] = order[k-1], order[0]
			}
		}
		permute(k - 1)
	}
	permute(n)
	out := make([]*rel, n)
	for i, x := range best {
		out[i] = children[x]
	}
	return out
}

// subtreeOf lists the relations of rs whose path to the root in parent
// passes c (c included).
func subtreeOf(c *rel, rs []*rel, parent map[*rel]*rel) []*rel {
	var sub []*rel
	for _, r := range rs {
		for x := r; x != nil; x = parent[x] {
			if x == c {
				sub = append(sub, r)
				break
			}
		}
	}
	return sub
}

// transferOffer estimates the share of the rows of the relations to
// that transfers keep from the hash tables the relations from build:
// within from's own join tree, each relation but the one probing is
// built on the key joining it to its parent there; one built on a single
// key holds at most the rows of its own subtree's join as keys, and a
// base relation of to with a column equal to that key, whose distinct
// values exceed those keys by transferShare, semi-joins it (see
// transfers).
func (l *lowering) transferOffer(from, to []*rel) float64 {
	top := from[0]
	for _, r := range from[1:] {
		if l.rows[r] > l.rows[top] {
			top = r
		}
	}
	inner, _ := l.spanning(from, top)
	keys := map[int]float64{} // class -> fewest distinct keys built on it
	for _, x := range from {
		px := inner[x]
		if x == top || px == nil {
			continue
		}
		_, bk := l.keysBetween(map[*rel]bool{px: true}, map[*rel]bool{x: true}, nil, nil)
		if len(bk) != 1 {
			continue
		}
		cl := l.class[bk[0]]
		d := math.Min(l.p.distinctIn(bk[0], l.rows[x]), l.joinRows(subtreeOf(x, from, inner)))
		if k, ok := keys[cl]; !ok || d < k {
			keys[cl] = d
		}
	}
	share := 1.0
	for _, r := range to {
		if r.table == nil {
			continue
		}
		for _, c := range r.cols {
			cl, ok := l.class[c.name]
			if !ok {
				continue
			}
			k, ok := keys[cl]
			if !ok {
				continue
			}
			if d := l.p.distinctIn(c.name, l.rows[r]); k < transferShare*d {
				share *= math.Max(minSel, k/d)
			}
		}
	}
	return share
}
