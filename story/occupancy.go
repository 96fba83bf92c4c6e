package story

import (
	"cmp"
	"slices"

	"github.com/bursar-hpc/bursar/trace"
)

// occupied is what the machine did over the submit span, in GPU-hours.
type occupied struct {
	held        float64   // every GPU held, parks included
	idleWaiting float64   // ∫ min(free, GPUs asked by waiting jobs)
	ownersIdle  float64   // ∫ min(free, Σ unused entitlements of teams while another waits)
	squatted    float64   // parked GPU-hours that ran no debug job
	team        []float64 // held per team, parks included
	parks       int
}

// change is a step in a team's held or waiting GPUs at second t.
type change struct {
	t          int64
	team       int
	held, wait int
}

// occupancy sweeps the run's job records and the users' parks over [0,
// span) (docs/story.md, "What is measured"): a job waits from its submit
// to its first start and from each preemption to its next start, and
// holds its GPUs from each start to its end or preemption; a park holds
// its GPUs from its grant to its end. A debug job inside a park adds
// nothing (the park holds its GPUs).
func occupancy(w *Workload, run *trace.Run, u *users, span int64) occupied {
	var ch []change
	stop := run.Stop
	add := func(from, to int64, team, held, wait int) {
		from, to = max(from, 0), min(to, stop)
		if to <= from {
			return
		}
		ch = append(ch, change{from, team, held, wait}, change{to, team, -held, -wait})
	}
	for j := range w.Jobs {
		if u.absorbed[j] {
			continue
		}
		rec := &run.Records[j]
		jb := &w.Jobs[j]
		g := w.Team[jb.Campaign]
		waitFrom := jb.Submit
		for k, s := range rec.Starts {
			add(waitFrom, s, g, 0, jb.GPUs)
			end := stop
			switch {
			case k < len(rec.Aborted()):
				end = rec.Aborted()[k]
				waitFrom = end
			case rec.End >= 0:
				end = rec.End
			}
			add(s, end, g, jb.GPUs, 0)
		}
		if len(rec.Starts) == len(rec.Aborted()) && rec.State != trace.Denied {
			add(waitFrom, stop, g, 0, jb.GPUs) // never (re)started
		}
	}
	var o occupied
	o.team = make([]float64, len(w.Groups))
	for i := range u.Parks {
		pk := &u.Parks[i]
		if pk.Start < 0 {
			continue
		}
		o.parks++
		g := w.Team[pk.Project]
		add(pk.Start, pk.End, g, pk.GPUs, 0)
		from, to := max(pk.Start, 0), min(pk.End, span)
		if to > from {
			o.squatted += float64(int64(pk.GPUs)*(to-from)-pk.DebugGPUs) / 3600
		}
	}
	slices.SortStableFunc(ch, func(a, b change) int { return cmp.Compare(a.t, b.t) })
	ent := make([]float64, len(w.Groups))
	for g := range w.Groups {
		ent[g] = w.Groups[g].Share * float64(w.Pool)
	}
	held, wait := make([]int, len(w.Groups)), make([]int, len(w.Groups))
	totHeld, totWait := 0, 0
	prev := int64(0)
	for i := 0; i <= len(ch); i++ {
		t := span
		if i < len(ch) {
			t = min(ch[i].t, span)
		}
		if dt := float64(t-prev) / 3600; dt > 0 {
			free := float64(w.Pool - totHeld)
			o.held += float64(totHeld) * dt
			o.idleWaiting += min(free, float64(totWait)) * dt
			unused := 0.0
			for g := range held {
				o.team[g] += float64(held[g]) * dt
				if totWait-wait[g] > 0 && float64(held[g]) < ent[g] {
					unused += ent[g] - float64(held[g])
				}
			}
			o.ownersIdle += min(free, unused) * dt
			prev = t
		}
		if i == len(ch) || ch[i].t >= span {
			break
		}
		c := ch[i]
		held[c.team] += c.held
		wait[c.team] += c.wait
		totHeld += c.held
		totWait += c.wait
	}
	return o
}
