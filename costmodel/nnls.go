package costmodel

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
)

// NNLS solves the non-negative least-squares problem
//
//	minimize ||A·x − b||₂  subject to  x ≥ 0
//
// with the active-set method of Lawson and Hanson (Solving Least Squares
// Problems, 1974, ch. 23). A is m×n (any m ≥ 1, n ≥ 1), b has m entries.
// Columns are scaled to unit norm internally (the cost model's columns
// differ by nine orders of magnitude: 1, bytes, rows); the returned x is in
// the original units. A zero column gets x = 0. The result is a pure
// function of A and b (no randomness), so equal inputs give bit-equal
// outputs. A and b are not modified.
func NNLS(a *mat.Dense, b []float64) ([]float64, error) {
	m, n := a.Dims()
	if m != len(b) {
		return nil, fmt.Errorf("costmodel: nnls: A has %d rows, b %d entries", m, len(b))
	}
	for _, v := range b {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, errors.New("costmodel: nnls: b holds a NaN or an infinity")
		}
	}
	scale := make([]float64, n)
	as := mat.NewDense(m, n, nil)
	for j := 0; j < n; j++ {
		var s float64
		for i := 0; i < m; i++ {
			v := a.At(i, j)
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("costmodel: nnls: A[%d,%d] is %v", i, j, v)
			}
			s += v * v
		}
		s = math.Sqrt(s)
		scale[j] = s
		for i := 0; i < m; i++ {
			if s > 0 {
				as.Set(i, j, a.At(i, j)/s)
			}
		}
	}
	bv := mat.NewVecDense(m, append([]float64(nil), b...))
	x := make([]float64, n)
	passive := make([]bool, n)
	usable := make([]bool, n)
	for j := range usable {
		usable[j] = scale[j] > 0
	}
	var bnorm float64
	for _, v := range b {
		bnorm = math.Max(bnorm, math.Abs(v))
	}
	tol := 1e-12 * float64(max(m, n)) * math.Max(bnorm, 1)
	grad := func() []float64 {
		// w = Aᵀ(b − A·x)
		r := mat.NewVecDense(m, nil)
		r.MulVec(as, mat.NewVecDense(n, append([]float64(nil), x...)))
		r.SubVec(bv, r)
		w := mat.NewVecDense(n, nil)
		w.MulVec(as.T(), r)
		return w.RawVector().Data
	}
	w := grad()
	for iter := 0; iter < 3*n+10; iter++ {
		j, best := -1, tol
		for k := 0; k < n; k++ {
			if !passive[k] && usable[k] && w[k] > best {
				j, best = k, w[k]
			}
		}
		if j < 0 {
			break
		}
		passive[j] = true
		for inner := 0; inner < 3*n+10; inner++ {
			s, err := lsPassive(as, bv, passive)
			if err != nil {
				return nil, err
			}
			minS := math.Inf(1)
			for k := 0; k < n; k++ {
				if passive[k] {
					minS = math.Min(minS, s[k])
				}
			}
			if minS > 0 {
				copy(x, s)
				break
			}
			// Step from x towards s as far as feasibility allows, then
			// drop the variables that hit zero.
			alpha := math.Inf(1)
			for k := 0; k < n; k++ {
				if passive[k] && s[k] <= 0 {
					alpha = math.Min(alpha, x[k]/(x[k]-s[k]))
				}
			}
			for k := 0; k < n; k++ {
				x[k] += alpha * (s[k] - x[k])
				if passive[k] && x[k] <= tol*1e-3 {
					passive[k], x[k] = false, 0
				}
			}
		}
		w = grad()
	}
	for j := range x {
		if scale[j] > 0 {
			x[j] /= scale[j]
		} else {
			x[j] = 0
		}
		if x[j] < 0 {
			x[j] = 0
		}
	}
	return x, nil
}

// lsPassive solves the unconstrained least-squares problem on the passive
// columns of a (the others held at zero) and returns a full-length vector.
func lsPassive(a *mat.Dense, b *mat.VecDense, passive []bool) ([]float64, error) {
	m, n := a.Dims()
	var cols []int
	for k := 0; k < n; k++ {
		if passive[k] {
			cols = append(cols, k)
		}
	}
	sub := mat.NewDense(m, len(cols), nil)
	for c, k := range cols {
		for i := 0; i < m; i++ {
			sub.Set(i, c, a.At(i, k))
		}
	}
	// Normal equations with a tiny ridge: the passive set is small (≤ a
	// few dozen columns) and the columns are unit norm, so this is well
	// conditioned unless columns are collinear, where the ridge picks the
	// minimum-norm-like solution instead of failing.
	var ata mat.Dense
	ata.Mul(sub.T(), sub)
	for c := range cols {
		ata.Set(c, c, ata.At(c, c)+1e-12)
	}
	var atb mat.VecDense
	atb.MulVec(sub.T(), b)
	var sol mat.VecDense
	if err := sol.SolveVec(&ata, &atb); err != nil {
		var cond mat.Condition
		if !errors.As(err, &cond) {
			return nil, fmt.Errorf("costmodel: nnls: %w", err)
		}
	}
	out := make([]float64, n)
	for c, k := range cols {
		out[k] = sol.AtVec(c)
	}
	return out, nil
}
