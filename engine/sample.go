package engine

import "github.com/bursar-hpc/bursar/policy"

// sampleCamp is one campaign as the sampling reads it: its id, and as 0 or
// 1 whether its GPUs count as productive (victim, science, storm) and as
// storm GPUs, so that the per-sample loop adds without a switch on the
// agent kind.
type sampleCamp struct {
	id                policy.CampaignID
	group             int
	productive, storm int
	first             bool // the first member of its group
}

// planSample lays the campaigns out for the sampling once per run: display
// group by display group, members in cast order (the order in which the
// per-group sums have always been added, so every float sum is the same).
func (w *world) planSample() {
	groups := w.res.Groups
	w.sampleCamps = make([]sampleCamp, 0, len(w.camps))
	for g := range groups {
		for k, i := range groups[g].Members {
			sc := sampleCamp{id: policy.CampaignID(i), group: g, first: k == 0}
			switch w.camps[i].kind {
			case kindStorm:
				sc.productive, sc.storm = 1, 1
			case kindVictim, kindAdaptive, kindNaive:
				sc.productive = 1
			}
			w.sampleCamps = append(w.sampleCamps, sc)
		}
	}
}

// sample reads the state after tick t: per display group the held GPUs and
// last-tick flows (the metrics' inputs), and only when the run keeps its
// series the bucket fill and spending too.
func (w *world) sample(t int) {
	v := w.values
	var productive, stormHeld int
	if bk := w.b.bk; bk != nil {
		productive, stormHeld = w.sampleGroupsBroker(bk)
	} else {
		productive, stormHeld = w.sampleGroups(w.b.a)
	}
	w.accumulate(t, productive, stormHeld)
	if !w.keepSeries {
		return
	}
	for g := range v {
		w.sampleSeriesGroup(g)
	}
	sr := &w.res.Series
	sr.T = append(sr.T, t)
	sr.Multiplier = append(sr.Multiplier, w.b.Multiplier())
	for d := range v {
		x := &v[d]
		sr.Held[d] = append(sr.Held[d], x.held)
		sr.Fill[d] = append(sr.Fill[d], fillFraction(x.tokens, x.bucket))
		sr.Spent[d] = append(sr.Spent[d], x.spent)
		sr.IO[d] = append(sr.IO[d], x.io)
		sr.Inference[d] = append(sr.Inference[d], x.inference)
	}
}

// accumulate adds a sample at tick t of the values readSample read to the
// metrics' sums.
func (w *world) accumulate(t, productive, stormHeld int) {
	v := w.values
	st := &w.stats
	for g := range v {
		st.io[g] += v[g].io
		st.inference[g] += v[g].inference
	}
	s := &w.s
	st.n++
	st.productive += float64(productive) / float64(s.Pool)
	if t >= s.StormStart && t < s.StormEnd {
		st.stormSum += stormHeld
		st.stormN++
		st.stormPeak = max(st.stormPeak, stormHeld)
		st.stormExcess += max(0, float64(stormHeld)-w.stormRate) * float64(s.SampleEvery)
	}
	for k := range w.res.Storms {
		sr := &w.res.Storms[k]
		if t >= sr.window.Start && t < sr.window.End {
			h := v[sr.group].held
			sr.sum += h
			sr.n++
			sr.PeakHeld = max(sr.PeakHeld, h)
		}
	}
}

// sampleGroupsBroker reads, campaign by campaign in group order, the held
// GPUs (into values[g].held) and the last-tick flows (values[g].io and
// .inference) from the Bursar broker, whose getters inline here;
// sampleGroups is the same through the Allocator interface. Two copies of
// one flat loop: with an interface call or a nested loop inside, the
// broker's loop spilled its sums on every campaign (callgrind,
// BenchmarkScenario). A group's first member sets its values, the others
// add to them, in member order as before.
func (w *world) sampleGroupsBroker(bk *policy.Broker) (productive, stormHeld int) {
	v := w.values
	for _, c := range w.sampleCamps {
		h := bk.Held(c.id, policy.AnyClass)
		io := bk.FlowUsedLastTick(c.id, policy.IO)
		inference := bk.FlowUsedLastTick(c.id, policy.Inference)
		x := &v[c.group]
		if c.first {
			x.held, x.io, x.inference = h, io, inference
		} else {
			x.held += h
			x.io += io
			x.inference += inference
		}
		productive += h * c.productive
		stormHeld += h * c.storm
	}
	return productive, stormHeld
}

func (w *world) sampleGroups(a policy.Allocator) (productive, stormHeld int) {
	v := w.values
	for _, c := range w.sampleCamps {
		h := a.Held(c.id, policy.AnyClass)
		io := a.FlowUsedLastTick(c.id, policy.IO)
		inference := a.FlowUsedLastTick(c.id, policy.Inference)
		x := &v[c.group]
		if c.first {
			x.held, x.io, x.inference = h, io, inference
		} else {
			x.held += h
			x.io += io
			x.inference += inference
		}
		productive += h * c.productive
		stormHeld += h * c.storm
	}
	return productive, stormHeld
}

// sampleSeriesGroup fills group g's series values beyond held: the flows
// summed by sample, and the bucket fill and spending, read only for a kept
// series (summed in member order, as before).
func (w *world) sampleSeriesGroup(g int) {
	x := &w.values[g]
	x.tokens, x.bucket, x.spent = 0, 0, 0
	for _, i := range w.res.Groups[g].Members {
		id := policy.CampaignID(i)
		x.tokens += w.b.Tokens(id)
		x.bucket += w.camps[i].bucket
		x.spent += w.b.Spent(id)
	}
}
