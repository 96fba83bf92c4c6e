package fairshare

// NewPlainRule is NewRule sorting the whole queue at every admission: the
// oracle of the kept order.
func NewPlainRule(knobs Knobs) *Rule {
	r := NewRule(knobs)
	r.plain = true
	return r
}
