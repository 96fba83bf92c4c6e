package quota

// Steady marks the rule as time-invariant (baseline.Steady): its
// admission reads no clock, ages nothing and keeps no per-tick usage, so
// the Core may skip the quiet ticks between events of a trace replay.
func (*Rule) Steady() {}
