package replay

import (
	"hora/scheduler"
	_ "hora/scheduler/batch" // registers the batch (FCFS/EASY) policy
)

func init() {
	newEngine = func(cfg scheduler.Config) (Scheduler, error) {
		e, err := scheduler.New(cfg)
		if err != nil {
			return nil, err
		}
		return e, nil
	}
}
