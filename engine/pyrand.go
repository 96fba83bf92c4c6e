package engine

import "math"

// PyRand is a random source that draws the same numbers as CPython's
// random.Random(seed): MT19937 seeded by init_by_array, 53-bit floats, and
// the same uniform, normal (Kinderman–Monahan) and lognormal transforms.
// Matching it is what lets a run reproduce the prototype's task lists.
type PyRand struct {
	mt  [mtN]uint32
	idx int
}

const (
	mtN         = 624
	mtM         = 397
	mtUpperMask = 0x80000000
	mtLowerMask = 0x7fffffff
)

// NewPyRand seeds like random.Random(seed): the key is |seed| split into
// 32-bit words, least significant first (0 gives the key [0]).
func NewPyRand(seed int64) *PyRand {
	u := uint64(seed)
	if seed < 0 {
		u = uint64(-seed)
	}
	key := []uint32{uint32(u)}
	if hi := uint32(u >> 32); hi != 0 {
		key = append(key, hi)
	}
	r := &PyRand{}
	r.initByArray(key)
	return r
}

func (r *PyRand) initGenrand(s uint32) {
	r.mt[0] = s
	for i := 1; i < mtN; i++ {
		r.mt[i] = 1812433253*(r.mt[i-1]^(r.mt[i-1]>>30)) + uint32(i)
	}
	r.idx = mtN
}

func (r *PyRand) initByArray(key []uint32) {
	r.initGenrand(19650218)
	i, j := 1, 0
	k := max(mtN, len(key))
	for ; k > 0; k-- {
		r.mt[i] = (r.mt[i] ^ ((r.mt[i-1] ^ (r.mt[i-1] >> 30)) * 1664525)) + key[j] + uint32(j)
		i++
		j++
		if i >= mtN {
			r.mt[0] = r.mt[mtN-1]
			i = 1
		}
		if j >= len(key) {
			j = 0
		}
	}
	for k = mtN - 1; k > 0; k-- {
		r.mt[i] = (r.mt[i] ^ ((r.mt[i-1] ^ (r.mt[i-1] >> 30)) * 1566083941)) - uint32(i)
		i++
		if i >= mtN {
			r.mt[0] = r.mt[mtN-1]
			i = 1
		}
	}
	r.mt[0] = 0x80000000
}

func (r *PyRand) next32() uint32 {
	if r.idx >= mtN {
		for k := 0; k < mtN; k++ {
			y := (r.mt[k] & mtUpperMask) | (r.mt[(k+1)%mtN] & mtLowerMask)
			v := r.mt[(k+mtM)%mtN] ^ (y >> 1)
			if y&1 != 0 {
				v ^= 0x9908b0df
			}
			r.mt[k] = v
		}
		r.idx = 0
	}
	y := r.mt[r.idx]
	r.idx++
	y ^= y >> 11
	y ^= (y << 7) & 0x9d2c5680
	y ^= (y << 15) & 0xefc60000
	y ^= y >> 18
	return y
}

// Random is a float in [0, 1) with 53 random bits, as random.random().
func (r *PyRand) Random() float64 {
	a := uint64(r.next32() >> 5)
	b := uint64(r.next32() >> 6)
	return float64(a*67108864+b) / (1 << 53)
}

// Uniform is a + (b−a)·u, as random.uniform.
func (r *PyRand) Uniform(a, b float64) float64 {
	// The conversion keeps a compiler from fusing the multiply and add.
	return a + float64((b-a)*r.Random())
}

// nvMagicConst is 4·exp(−0.5)/√2, written as CPython computes it.
const nvMagicConst = 0x1.b72cd3f331398p+0

// Normal is random.normalvariate(mu, sigma) (Kinderman–Monahan).
func (r *PyRand) Normal(mu, sigma float64) float64 {
	var z float64
	for {
		u1 := r.Random()
		u2 := 1.0 - r.Random()
		z = nvMagicConst * (u1 - 0.5) / u2
		zz := z * z / 4.0
		if zz <= -math.Log(u2) {
			break
		}
	}
	return mu + float64(z*sigma)
}

// LogNormal is exp(Normal(mu, sigma)).
func (r *PyRand) LogNormal(mu, sigma float64) float64 { return math.Exp(r.Normal(mu, sigma)) }
