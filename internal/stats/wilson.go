package stats

import "math"

// Wilson is the proportion k/n with its Wilson score interval at Level
// (Wilson 1927), clipped to [0, 1]; NaN and NoInterval when n is 0.
func Wilson(k, n int) (p float64, iv Interval) {
	if n == 0 {
		return math.NaN(), NoInterval()
	}
	const z = 1.959963984540054 // the standard normal's 0.975 quantile
	nf := float64(n)
	p = float64(k) / nf
	d := 1 + z*z/nf
	c := (p + z*z/(2*nf)) / d
	h := z / d * math.Sqrt(p*(1-p)/nf+z*z/(4*nf*nf))
	return p, Interval{Lo: max(0, c-h), Hi: min(1, c+h)}
}
