package baseline

import (
	"cmp"
	"slices"
)

// The EASY pass belongs to package policy/easy (the traces branch). Until
// it is merged here, this file is the tiny local adapter standing in for
// it with the same API: when policy/easy lands, this file becomes three
// type aliases (easyRunning = easy.Running, easyJob = easy.Job,
// easyScheduler = easy.Scheduler).

type easyRunning struct {
	GPUs   int
	EstEnd int64
}

type easyJob struct {
	GPUs     int
	Estimate int64
}

type easyScheduler struct {
	ends  []easyRunning
	start []int
}

// Pass is studies.md §2.1 steps (3) and (4).
func (s *easyScheduler) Pass(now int64, free int, running []easyRunning, queue []easyJob) []int {
	s.start = s.start[:0]
	s.ends = append(s.ends[:0], running...)
	h := 0
	for ; h < len(queue) && queue[h].GPUs <= free; h++ {
		free -= queue[h].GPUs
		s.start = append(s.start, h)
		s.ends = append(s.ends, easyRunning{GPUs: queue[h].GPUs, EstEnd: now + queue[h].Estimate})
	}
	if h >= len(queue) {
		return s.start
	}
	slices.SortFunc(s.ends, func(a, b easyRunning) int { return cmp.Compare(a.EstEnd, b.EstEnd) })
	avail, shadow, extra, found := free, int64(0), 0, false
	for j := 0; j < len(s.ends); j++ {
		avail += s.ends[j].GPUs
		if avail >= queue[h].GPUs {
			shadow = s.ends[j].EstEnd
			for j+1 < len(s.ends) && s.ends[j+1].EstEnd == shadow {
				j++
				avail += s.ends[j].GPUs
			}
			extra, found = avail-queue[h].GPUs, true
			break
		}
	}
	for q := h + 1; q < len(queue); q++ {
		job := queue[q]
		if job.GPUs > free {
			continue
		}
		switch {
		case found && now+job.Estimate <= shadow:
		case job.GPUs <= extra || !found:
			if found {
				extra -= job.GPUs
			}
		default:
			continue
		}
		free -= job.GPUs
		s.start = append(s.start, q)
	}
	return s.start
}
