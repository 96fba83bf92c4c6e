package story

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/trace"
)

// Day is a day in seconds.
const Day = 86400

// Kind is what a job is for: the lab's three kinds of work.
type Kind uint8

const (
	// Training: long jobs on whole nodes, checkpointed.
	Training Kind = iota
	// Debug: short interactive jobs whose launch latency a person waits on.
	Debug
	// Eval: evaluations of checkpoints, a few GPUs for an hour or two.
	Eval

	numKinds = 3
)

var kindNames = [numKinds]string{"training", "debug", "eval"}

func (k Kind) String() string { return kindNames[k] }

// Project is one leaf of the lab's tree: a project of a team, entitled
// to Weight of the pool. It is one campaign of the replay.
type Project struct {
	Name   string
	Weight float64
}

// Team is one group of the tree: its projects share its entitlement.
type Team struct {
	Name     string
	Projects []Project
}

// Lab is the workload's model (docs/story.md, "The lab"): a tree of teams
// and projects with weights, each project submitting training, debug and
// evaluation jobs at rates that follow its team's season.
type Lab struct {
	Teams []Team
	// Pool is the number of GPUs; Days the horizon of submits.
	Pool int
	Days int
	// Load is the offered GPU-seconds ÷ (pool × horizon) averaged over
	// the seasons.
	Load float64
	// Season is the relative amplitude of each team's demand (0: none)
	// and SeasonDays its period; each team's phase is its own.
	Season     float64
	SeasonDays float64
	// Mix is each kind's fraction of the offered GPU-seconds.
	Mix [numKinds]float64
	// Urgent is the fraction of training jobs that are truly urgent
	// (declared deadline by honest users).
	Urgent float64
}

// DefaultLab is the lab of the story at the scale of 128 GPUs (16 nodes ×
// 8): four teams, six projects, weights A1 35 %, A2 10 %, B1 10 %, B2
// 20 %, C1 15 %, D1 10 %; 90 days at an offered load of 0.8 with seasons
// of ±60 % over 60 days; 80 % of the GPU-seconds training, 5 % debug,
// 15 % evaluations; 5 % of training jobs urgent.
func DefaultLab() Lab {
	return Lab{
		Teams: []Team{
			{Name: "A", Projects: []Project{{"A1", 0.35}, {"A2", 0.10}}},
			{Name: "B", Projects: []Project{{"B1", 0.10}, {"B2", 0.20}}},
			{Name: "C", Projects: []Project{{"C1", 0.15}}},
			{Name: "D", Projects: []Project{{"D1", 0.10}}},
		},
		Pool: 128, Days: 90, Load: 0.8, Season: 0.6, SeasonDays: 60,
		Mix:    [numKinds]float64{Training: 0.80, Debug: 0.05, Eval: 0.15},
		Urgent: 0.05,
	}
}

// shape is a kind's job sizes: widths drawn uniformly from GPUs, run
// times log-uniform on [MinRun, MaxRun] seconds, the estimate the run
// times a factor uniform on [1, EstFactor].
type shape struct {
	GPUs           []int
	MinRun, MaxRun float64
	EstFactor      float64
	Class          policy.Class
}

// shapes are the kinds' job sizes (docs/story.md): training on one to
// four nodes of 8 GPUs for 6 h to 2 days, debug on 1 to 8 GPUs for 5
// minutes to an hour, evaluations on 1 to 8 GPUs for 20 minutes to 4 h.
var shapes = [numKinds]shape{
	Training: {GPUs: []int{8, 16, 32}, MinRun: 6 * 3600, MaxRun: 48 * 3600, EstFactor: 1.5, Class: policy.AgentBurst},
	Debug:    {GPUs: []int{1, 2, 4, 8}, MinRun: 300, MaxRun: 3600, EstFactor: 2, Class: policy.Interactive},
	Eval:     {GPUs: []int{1, 2, 4, 8}, MinRun: 1200, MaxRun: 4 * 3600, EstFactor: 1.5, Class: policy.Opportunistic},
}

// DebugWidest is the widest debug job: the GPUs a squatting project parks.
const DebugWidest = 8

func (s *shape) meanGPUSeconds() float64 {
	g := 0.0
	for _, x := range s.GPUs {
		g += float64(x)
	}
	g /= float64(len(s.GPUs))
	run := (s.MaxRun - s.MinRun) / math.Log(s.MaxRun/s.MinRun)
	return g * run
}

// Check says what is wrong with the lab, naming the field.
func (l *Lab) Check() error {
	sum := 0.0
	for _, t := range l.Teams {
		if len(t.Projects) == 0 {
			return fmt.Errorf("lab: team %q has no project", t.Name)
		}
		for _, p := range t.Projects {
			if !(p.Weight > 0) {
				return fmt.Errorf("lab: project %q: weight %v must be above 0", p.Name, p.Weight)
			}
			sum += p.Weight
		}
	}
	mix := l.Mix[Training] + l.Mix[Debug] + l.Mix[Eval]
	switch {
	case len(l.Teams) == 0:
		return fmt.Errorf("lab: no team")
	case math.Abs(sum-1) > 1e-9:
		return fmt.Errorf("lab: the projects' weights sum to %v, not 1", sum)
	case l.Pool < 32:
		return fmt.Errorf("lab: pool %d: at least 32 GPUs (the widest training job)", l.Pool)
	case l.Days < 1:
		return fmt.Errorf("lab: days %d: at least 1", l.Days)
	case !(l.Load > 0 && l.Load <= 4):
		return fmt.Errorf("lab: load %v: above 0 and at most 4", l.Load)
	case !(l.Season >= 0 && l.Season < 1):
		return fmt.Errorf("lab: season %v: at least 0 and below 1", l.Season)
	case !(l.SeasonDays > 0):
		return fmt.Errorf("lab: season_days %v: above 0", l.SeasonDays)
	case math.Abs(mix-1) > 1e-9 || l.Mix[Training] < 0 || l.Mix[Debug] < 0 || l.Mix[Eval] < 0:
		return fmt.Errorf("lab: the kinds' mix %v must be fractions summing to 1", l.Mix)
	case !(l.Urgent >= 0 && l.Urgent <= 1):
		return fmt.Errorf("lab: urgent %v: a fraction", l.Urgent)
	}
	return nil
}

// Workload is the lab's jobs for one seed: the trace.Workload every
// policy replays (a campaign per project, a group per team, entitled to
// their weights) and what the workload does not say of each job.
type Workload struct {
	*trace.Workload
	// Kind of each job, indexed like Jobs.
	Kind []Kind
	// Team of each campaign (a group index).
	Team []int
	// Phase is each team's season phase, a fraction of the period.
	Phase []float64
}

// labStream separates the lab's draws from every other use of a seed.
const labStream = 0x6c61622d73746f72 // "lab-stor"

// Season is team g's demand multiplier at second t: 1 + Season × sin(2π
// (t ÷ period + phase)).
func (l *Lab) season(phase float64, t float64) float64 {
	return 1 + l.Season*math.Sin(2*math.Pi*(t/(l.SeasonDays*Day)+phase))
}

// Generate draws the lab's jobs for seed (docs/story.md, "The lab"). Each
// team's season phase is drawn uniformly; each project's jobs of each
// kind arrive as a Poisson process whose rate is its weight × the load ×
// the pool × the kind's mix ÷ the kind's mean GPU-seconds, times its
// team's season (drawn by thinning at the peak rate); a job's width is
// uniform over its kind's widths, its run log-uniform, its estimate the
// run times a uniform factor. A training job is urgent (deadline) with
// probability Urgent. Jobs are numbered 1 … n in submit order (ties:
// project, kind, draw order). The same lab and seed give the same jobs.
func (l *Lab) Generate(seed int64) (*Workload, error) {
	if err := l.Check(); err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(uint64(seed), labStream))
	out := &Workload{Workload: &trace.Workload{
		Name: fmt.Sprintf("lab(pool=%d,days=%d,load=%g,seed=%d)", l.Pool, l.Days, l.Load, seed),
		Pool: l.Pool, Meter: trace.MeterGroup, Shares: trace.ShareGroups,
	}}
	w := out.Workload
	for g, t := range l.Teams {
		out.Phase = append(out.Phase, rng.Float64())
		grp := trace.Group{ID: g + 1, Name: t.Name}
		for _, p := range t.Projects {
			c := len(w.Campaigns)
			grp.Members = append(grp.Members, c)
			grp.Share += p.Weight
			w.Campaigns = append(w.Campaigns, trace.Campaign{Name: p.Name, ID: c + 1, Group: g, Share: p.Weight})
			out.Team = append(out.Team, g)
		}
		w.Groups = append(w.Groups, grp)
	}
	type drawn struct {
		job  trace.Job
		kind Kind
	}
	var jobs []drawn
	horizon := float64(l.Days) * Day
	peak := 1 + l.Season
	for c := range w.Campaigns {
		cp := &w.Campaigns[c]
		phase := out.Phase[out.Team[c]]
		for k := range Kind(numKinds) {
			sh := &shapes[k]
			rate := cp.Share * l.Load * float64(l.Pool) * l.Mix[k] / sh.meanGPUSeconds()
			if rate <= 0 {
				continue
			}
			// One stream per project and kind, so that one project's
			// draws do not move another's.
			r := rand.New(rand.NewPCG(rng.Uint64(), uint64(c)<<8|uint64(k)))
			for t := 0.0; ; {
				t += r.ExpFloat64() / (rate * peak)
				if t >= horizon {
					break
				}
				keep := r.Float64() < l.season(phase, t)/peak
				gpus := sh.GPUs[r.IntN(len(sh.GPUs))]
				run := int64(math.Round(sh.MinRun * math.Exp(r.Float64()*math.Log(sh.MaxRun/sh.MinRun))))
				est := int64(math.Ceil(float64(run) * (1 + (sh.EstFactor-1)*r.Float64())))
				urgent := k == Training && r.Float64() < l.Urgent
				if !keep {
					continue
				}
				cls := sh.Class
				if urgent {
					cls = policy.Deadline
				}
				jobs = append(jobs, drawn{kind: k, job: trace.Job{
					Submit: int64(t) + 1, Run: run, Estimate: est, GPUs: gpus, Campaign: c, Class: cls,
					Queue: -1, User: cp.ID, Group: w.Groups[cp.Group].ID, LogWait: -1,
				}})
			}
		}
	}
	// Stable: equal submits keep project, kind and draw order.
	slices.SortStableFunc(jobs, func(a, b drawn) int { return cmp.Compare(a.job.Submit, b.job.Submit) })
	w.Jobs = make([]trace.Job, len(jobs))
	out.Kind = make([]Kind, len(jobs))
	for i := range jobs {
		jobs[i].job.Number = int64(i + 1)
		w.Jobs[i], out.Kind[i] = jobs[i].job, jobs[i].kind
		gs := int64(jobs[i].job.GPUs) * jobs[i].job.Run
		cp := &w.Campaigns[jobs[i].job.Campaign]
		cp.GPUSeconds += gs
		cp.Jobs++
		w.Groups[cp.Group].GPUSeconds += gs
		w.Groups[cp.Group].LogGPUSeconds += gs
	}
	w.Records = len(w.Jobs)
	if len(w.Jobs) == 0 {
		return nil, fmt.Errorf("lab: no job drawn (seed %d)", seed)
	}
	return out, nil
}
