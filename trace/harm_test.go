package trace

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// Fair start time by the first and by the last start, hand-worked. Stop
// 100; the sampled jobs and their fair starts:
//
//	job  starts        fair  first start        last start
//	J0   10            10    on time            on time
//	J1   5, then 50    5     on time            late by 45 (preempted at 20)
//	J2   30            10    late by 20         late by 20
//	J3   never         40    late by 60 (cens.) late by 60
//	J4   never         none  late by 0 (cens., the copy never started it either)
//	J5   denied        none  left out
//	J6   70            none  left out (started, the copy reached the horizon)
//
// n = 5. First start: 3 late (0.6), mean miss (20 + 60 + 0) ÷ 3. Last
// start: 4 late (0.8), mean miss (45 + 20 + 60 + 0) ÷ 4 = 31.25.
func TestFairStartFirstAndLastHandWorked(t *testing.T) {
	run := &Run{Stop: 100, Records: []JobRecord{
		{Starts: []int64{10}, State: Served},
		{Starts: []int64{5, 50}, Preemptions: 1, State: Served},
		{Starts: []int64{30}, State: Served},
		{State: Unfinished},
		{State: Unfinished},
		{State: Denied},
		{Starts: []int64{70}, State: Served},
	}}
	run.Records[1].Abort(20, 0)
	sample := []int{0, 1, 2, 3, 4, 5, 6}
	fair := []int64{10, 5, 10, 40, -1, -1, -1}
	s := FairStarts(run, sample, fair, 0)
	assert.Equal(t, 5, s.N)
	assert.Equal(t, 3, s.Late)
	assert.InDelta(t, 0.6, s.LateFrac, 1e-12)
	assert.InDelta(t, 80.0/3, s.MeanMiss, 1e-12)
	assert.Equal(t, 2, s.Censored)
	assert.Equal(t, 1, s.Unknown)
	assert.Equal(t, 4, s.Last.Late)
	assert.InDelta(t, 0.8, s.Last.LateFrac, 1e-12)
	assert.InDelta(t, 31.25, s.Last.MeanMiss, 1e-12)
	assert.Equal(t, 2, s.Last.Censored)
	assert.True(t, s.Last.LateLo < 0.8 && s.Last.LateHi > 0.8)
}

// The harm of preemption, hand-worked over four measured jobs (a denied
// one left out), stop 100:
//
//	job  submit  first start  preemptions
//	A    0       10           0
//	B    0       5            1
//	C    10      12           10
//	D    20      never        0   (first wait censored: 100 − 20 = 80)
//
// Mean first wait (10 + 5 + 2 + 80) ÷ 4 = 24.25, a lower bound;
// preemptions per job 11 ÷ 4 = 2.75, at most 10; preempted at least once
// 2 of 4, at least ten times 1 of 4.
func TestHarmHandWorked(t *testing.T) {
	recs := []JobRecord{
		{Submit: 0, Starts: []int64{10}, State: Served},
		{Submit: 0, Starts: []int64{5, 50}, Preemptions: 1, State: Served},
		{Submit: 10, Starts: []int64{12, 30, 40, 50, 60, 61, 62, 63, 64, 65, 66}, Preemptions: 10, State: Served},
		{Submit: 20, State: Unfinished},
		{Submit: 30, State: Denied, Preemptions: 50},
	}
	h := harmOf(recs, []int32{0, 1, 2, 3, 4}, 100)
	assert.Equal(t, Harm{Jobs: 4, FirstWait: 24.25, FirstWaitLower: true, MeanPreempt: 2.75, MaxPreempt: 10, Preempted: 0.5, Preempted10: 0.25}, h)
	// Only jobs a measured interval holds count.
	h = harmOf(recs, []int32{0, 1}, 100)
	assert.Equal(t, Harm{Jobs: 2, FirstWait: 7.5, MeanPreempt: 0.5, MaxPreempt: 1, Preempted: 0.5}, h)
}
