// Package story is the AI lab's story as an experiment (docs/story.md):
// the lab's workload (a tree of teams and projects with weights, each
// project submitting training, debug and evaluation jobs with seasonal
// demand; Lab, Generate), its users who respond to the policy (Rules:
// inflation of the declared class, squatting on parked GPUs; what each
// policy charges, Price), and the study that replays the lab's three
// regimes and Bursar with honest and strategic users (Study).
//
// The users are a trace.Actor and trace.Users of the one replay driver
// (trace.Replay): they declare each job's class as it is filed, run the
// debug jobs that fit in a project's parked job, and review their
// behaviour at their own times from the waits the queue shows. Everything
// is drawn from the run's seed; no map is iterated on the simulation path.
package story
