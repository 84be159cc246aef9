package replay

import (
	"hora/scheduler"
	_ "hora/scheduler/batch"   // registers the batch (FCFS/EASY) policy
	_ "hora/scheduler/dlt"     // registers the dlt (divisible real-time) policy
	_ "hora/scheduler/reserve" // registers the reserve (advance reservation) policy
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
