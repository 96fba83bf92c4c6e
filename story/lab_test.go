package story

import (
	"math"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/priority"
)

func TestLabIsSeededAndEntitledByWeight(t *testing.T) {
	lab := DefaultLab()
	lab.Days = 28
	a, err := lab.Generate(3)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := lab.Generate(3)
	c, _ := lab.Generate(4)
	if !slices.Equal(a.Jobs, b.Jobs) || !slices.Equal(a.Kind, b.Kind) {
		t.Fatal("the same seed drew other jobs")
	}
	if slices.Equal(a.Jobs, c.Jobs) {
		t.Fatal("seeds 3 and 4 drew the same jobs")
	}
	want := map[string]float64{"A1": 0.35, "A2": 0.10, "B1": 0.10, "B2": 0.20, "C1": 0.15, "D1": 0.10}
	for _, cp := range a.Campaigns {
		if cp.Share != want[cp.Name] {
			t.Errorf("project %s entitled to %v, want %v", cp.Name, cp.Share, want[cp.Name])
		}
	}
	e := a.Entitlements()
	if len(e.Groups) != 4 || math.Abs(e.Groups[0].Share-0.45) > 1e-12 || len(e.Groups[0].Members) != 2 {
		t.Fatalf("team A: %+v, want 45 %% over A1 and A2", e.Groups[0])
	}
}

// TestLabOffersItsLoadWithSeasons: over 90 days the offered GPU-seconds
// are the load × pool × horizon within 10 %, each project's within 25 %
// of its weight's part, and a team's busiest 15 days offer at least
// twice its quietest (seasons of ±60 %).
func TestLabOffersItsLoadWithSeasons(t *testing.T) {
	lab := DefaultLab()
	w, err := lab.Generate(1)
	if err != nil {
		t.Fatal(err)
	}
	total := 0.0
	per := make([]float64, len(w.Campaigns))
	bins := make([][6]float64, len(w.Groups))
	for i := range w.Jobs {
		jb := &w.Jobs[i]
		gs := float64(jb.GPUs) * float64(jb.Run)
		total += gs
		per[jb.Campaign] += gs
		bins[w.Team[jb.Campaign]][min(int(jb.Submit/(15*Day)), 5)] += gs
	}
	offered := lab.Load * float64(lab.Pool) * float64(lab.Days) * Day
	if math.Abs(total/offered-1) > 0.1 {
		t.Errorf("offered %.3g GPU-s, want %.3g ± 10 %%", total, offered)
	}
	for c, cp := range w.Campaigns {
		if r := per[c] / (cp.Share * total); r < 0.75 || r > 1.25 {
			t.Errorf("project %s offered %.2f of its weight's part", cp.Name, r)
		}
	}
	for g, b := range bins {
		if hi, lo := slices.Max(b[:]), slices.Min(b[:]); hi < 2*lo {
			t.Errorf("team %s: busiest 15 days %.3g, quietest %.3g: no season", w.Groups[g].Name, hi, lo)
		}
	}
}

func TestLabJobsKeepTheirShapes(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		lab := DefaultLab()
		lab.Days = rapid.IntRange(1, 20).Draw(t, "days")
		lab.Load = rapid.Float64Range(0.05, 1.5).Draw(t, "load")
		lab.Season = rapid.Float64Range(0, 0.95).Draw(t, "season")
		w, err := lab.Generate(rapid.Int64().Draw(t, "seed"))
		if err != nil {
			return // no job drawn on a tiny lab
		}
		for i := range w.Jobs {
			jb, sh := &w.Jobs[i], &shapes[w.Kind[i]]
			if jb.Number != int64(i+1) || (i > 0 && jb.Submit < w.Jobs[i-1].Submit) {
				t.Fatalf("job %d: number %d submit %d out of order", i, jb.Number, jb.Submit)
			}
			if jb.Submit < 1 || jb.Submit > int64(lab.Days)*Day {
				t.Fatalf("job %d submitted at %d, outside the horizon", i, jb.Submit)
			}
			if !slices.Contains(sh.GPUs, jb.GPUs) || float64(jb.Run) < sh.MinRun-1 || float64(jb.Run) > sh.MaxRun+1 || jb.Estimate < jb.Run {
				t.Fatalf("job %d (%v): %d GPUs, run %d, estimate %d", i, w.Kind[i], jb.GPUs, jb.Run, jb.Estimate)
			}
			if jb.Class != sh.Class && !(w.Kind[i] == Training && jb.Class == policy.Deadline) {
				t.Fatalf("job %d (%v) of class %v", i, w.Kind[i], jb.Class)
			}
		}
	})
}

// TestStrategicUsersInflatePriority: on 60 days of the lab under
// priority, strategic users raise (every project by the end) and the
// top tier's share of the last weeks is far above the honest users'
// (their urgent and debug jobs only); honest users never change.
func TestStrategicUsersInflatePriority(t *testing.T) {
	st := NewStudy()
	st.Lab.Days = 60
	h, _, err := st.RunSpec(Spec{Policy: priority.Name, Users: 0, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	s, _, err := st.RunSpec(Spec{Policy: priority.Name, Users: 1, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if h.Changes != 0 || h.Parks != 0 || h.Absorbed != 0 {
		t.Fatalf("honest users changed %d times, parked %d", h.Changes, h.Parks)
	}
	if s.RaisedEnd == 0 || !(s.TopShareEnd > 2*h.TopShareEnd) {
		t.Fatalf("strategic: %d raised, top share %.2f against honest %.2f", s.RaisedEnd, s.TopShareEnd, h.TopShareEnd)
	}
	if !(s.DebugLatency > h.DebugLatency) {
		t.Fatalf("inflation left debug latency at %.2f h (honest %.2f h)", s.DebugLatency, h.DebugLatency)
	}
}
