// Package policies registers every scheduling policy hora ships. Drivers
// (horad, hora replay) import it for its side effect; the scheduler package
// itself cannot import its policies without an import cycle.
package policies

import (
	_ "hora/scheduler/batch"   // FCFS + EASY backfilling
	_ "hora/scheduler/dlt"     // divisible real-time jobs
	_ "hora/scheduler/reserve" // rigid deadline jobs and advance reservations
)
