package baseline

import "github.com/bursar-hpc/bursar/policy/easy"

// The EASY pass is policy/easy's (docs/studies.md §2.1 steps 3 and 4); these
// names keep AdmitEASY readable.
type (
	easyRunning   = easy.Running
	easyJob       = easy.Job
	easyScheduler = easy.Scheduler
)
