package controller

import (
	"fmt"

	"hora/api"
)

// Slurm bounds the strings a submission may store (job_mgr.c
// _validate_job_create_req): names and other words at MAX_STR_LEN (1024
// bytes), paths at BUF_SIZE (4096), "to prevent malicious user filling
// slurmctld's memory", and refuses longer ones with ESLURM_PATHNAME_TOO_LONG.
// hora does the same, naming the field after Slurm's text.
const (
	maxWordLen = 1024
	maxPathLen = 4096
	// MsgTooLong is Slurm's strerror for ESLURM_PATHNAME_TOO_LONG.
	MsgTooLong = "Pathname of a file, directory or other parameter too long"
)

// checkFieldSizes refuses a spec with an oversized word or path.
func checkFieldSizes(s *api.JobSpec) error {
	for _, f := range []struct {
		what, v string
		max     int
	}{
		{"job name", s.Name, maxWordLen}, {"partition", s.Partition, maxWordLen}, {"account", s.Account, maxWordLen},
		{"qos", s.QOS, maxWordLen}, {"comment", s.Comment, maxWordLen}, {"reservation", s.Reservation, maxWordLen},
		{"dependency", s.Dependency, maxWordLen}, {"array", s.Array, maxWordLen}, {"submit host", s.SubmitHost, maxWordLen},
		{"work dir", s.WorkDir, maxPathLen}, {"output", s.Stdout, maxPathLen}, {"error", s.Stderr, maxPathLen},
		{"input", s.Stdin, maxPathLen}, {"command", s.Command, maxPathLen}, {"load input", s.Input, maxPathLen},
	} {
		if len(f.v) > f.max {
			return &api.Error{Message: fmt.Sprintf("%s (%s: %d bytes, at most %d)", MsgTooLong, f.what, len(f.v), f.max),
				Code: api.CodeBadRequest}
		}
	}
	return nil
}
