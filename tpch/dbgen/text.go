package dbgen

// appendText appends dbgen's make_text: a slice of the text pool of random
// length around avg, at a random offset (stream sd).
func (g *Generator) appendText(s *streams, b []byte, avg int, sd int) []byte {
	lo := int64(float64(avg) * vStrLow)
	hi := int64(float64(avg) * vStrHgh)
	off := s.random(0, textPoolSize-hi, sd)
	n := s.random(lo, hi, sd)
	return append(b, g.sh.pool[off:off+n]...)
}

// appendVStr appends dbgen's V_STR: random alphanumerics (a_rand).
func appendVStr(s *streams, b []byte, avg int, sd int) []byte {
	const alphaNum = "0123456789abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ,"
	n := s.random(int64(float64(avg)*vStrLow), int64(float64(avg)*vStrHgh), sd)
	var char int64
	for i := int64(0); i < n; i++ {
		if i%5 == 0 {
			char = s.random(0, maxLong, sd)
		}
		b = append(b, alphaNum[char&0o77])
		char >>= 6
	}
	return b
}

// appendPhone appends gen_phone: "CC-AAA-EEE-NNNN" with country code
// 10+nation.
func appendPhone(s *streams, b []byte, nation int64, sd int) []byte {
	a := s.random(100, 999, sd)
	e := s.random(100, 999, sd)
	n := s.random(1000, 9999, sd)
	b = appendPadded(b, 10+nation%nationsMax, 2)
	b = append(b, '-')
	b = appendPadded(b, a, 3)
	b = append(b, '-')
	b = appendPadded(b, e, 3)
	b = append(b, '-')
	return appendPadded(b, n, 4)
}

// appendPadded appends v in decimal, zero-padded to width digits.
func appendPadded(b []byte, v int64, width int) []byte {
	var buf [20]byte
	i := len(buf)
	for v > 0 || i == len(buf) {
		i--
		buf[i] = byte('0' + v%10)
		v /= 10
	}
	for len(buf)-i < width {
		i--
		buf[i] = '0'
	}
	return append(b, buf[i:]...)
}

const (
	vStrLow    = 0.4
	vStrHgh    = 1.6
	nationsMax = 90
)
