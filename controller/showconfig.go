package controller

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strconv"

	"hora/api"
	"hora/sbatch"
)

// hConfig answers `scontrol show config`: Slurm's keys, in the order
// scontrol 22.05 prints them, each with the value that holds in this horad
// (docs/jobs.md says how each maps). Keys with no meaning in hora are left
// out rather than invented.
func (c *Controller) hConfig(ctx context.Context, who *Caller, r *http.Request) (any, error) {
	c.mu.Lock()
	next := c.nextID
	c.mu.Unlock()
	sec := func(n int) string { return strconv.Itoa(n) + " sec" }
	scheduler := "sched/builtin"
	for _, p := range c.cfg.Partitions {
		if (p.Policy == "" || p.Policy == "batch") && p.Backfill != "fcfs" {
			scheduler = "sched/backfill" // EASY backfilling, as Slurm's plugin
		}
	}
	depParams := "(null)"
	if c.cfg.KillOnInvalidDep {
		depParams = "kill_invalid_depend"
	}
	confPath := c.cfg.Path()
	if confPath == "" {
		confPath = "(null)"
	} else if abs, err := filepath.Abs(confPath); err == nil {
		confPath = abs
	}
	stateDir, _ := filepath.Abs(c.cfg.StateDir)
	host, _ := os.Hostname()
	pairs := []api.ConfigPair{
		{Key: "AccountingStorageEnforce", Value: "none"},
		// toil polls at the larger of AcctGatherNodeFreq and
		// SchedulerTimeSlice (× 1.2): both must be there.
		{Key: "AcctGatherNodeFreq", Value: "0 sec"},
		{Key: "AccountingStorageType", Value: "accounting_storage/hora"}, // sacct reads horad's own store
		{Key: "AuthType", Value: "auth/peercred"},                        // SO_PEERCRED on the socket
		{Key: "BOOT_TIME", Value: sbatch.FormatTimestamp(c.booted.Unix(), "", c.now())},
		{Key: "ClusterName", Value: c.cfg.ClusterName},
		{Key: "DefMemPerNode", Value: "UNLIMITED"},
		{Key: "DependencyParameters", Value: depParams},
		{Key: "EnforcePartLimits", Value: "NO"},
		{Key: "FirstJobId", Value: strconv.FormatInt(c.cfg.FirstJobID, 10)},
		{Key: "InactiveLimit", Value: "0 sec"},
		{Key: "JobCompType", Value: "jobcomp/none"},
		{Key: "JobRequeue", Value: strconv.Itoa(*c.cfg.JobRequeue)},
		{Key: "KillWait", Value: sec(c.cfg.KillWaitS)},
		{Key: "MaxArraySize", Value: strconv.Itoa(c.cfg.MaxArraySize)},
		{Key: "MaxJobCount", Value: "4294901760"}, // no cap but the priority scale's
		{Key: "MaxMemPerNode", Value: "UNLIMITED"},
		{Key: "MessageTimeout", Value: sec(int(api.DefaultMessageTimeout.Seconds()))},
		{Key: "MinJobAge", Value: sec(c.cfg.MinJobAgeS)},
		{Key: "MpiDefault", Value: "none"},
		{Key: "NEXT_JOB_ID", Value: strconv.FormatInt(next, 10)},
		{Key: "OverTimeLimit", Value: "0 min"},
		{Key: "PreemptMode", Value: "OFF"},
		{Key: "PriorityType", Value: "priority/basic"},
		{Key: "ProctrackType", Value: "proctrack/pgid"},
		{Key: "ReturnToService", Value: strconv.Itoa(*c.cfg.ReturnToService)},
		{Key: "SchedulerParameters", Value: "(null)"},
		// Slurm's default slice, printed whatever PreemptMode says; hora
		// never time-slices (PreemptMode OFF), as Slurm with that mode.
		{Key: "SchedulerTimeSlice", Value: "30 sec"},
		{Key: "SchedulerType", Value: scheduler},
		// Resource jobs share nodes by cores and memory (docs/resources.md);
		// a job that names no resource still takes whole nodes.
		{Key: "SelectType", Value: "select/cons_tres"},
		{Key: "SelectTypeParameters", Value: "CR_CORE_MEMORY"},
		{Key: "SlurmctldHost[0]", Value: host},
		{Key: "SLURM_CONF", Value: confPath},
		{Key: "SLURM_VERSION", Value: "22.05.8"}, // the Slurm whose commands hora speaks
		{Key: "StateSaveLocation", Value: stateDir},
	}
	return &api.ConfigResponse{Pairs: pairs, Now: c.now().Unix(), Host: host}, nil
}
