package sbatch

import (
	"errors"
	"strings"

	"hora/api"
)

// srun and salloc read the one option registry (options.go) through these
// helpers: their getopt tables, their input variables, and the job of the
// allocation they create.

// SrunOptions and SallocOptions return the commands' getopt tables, built
// on first use: as variables they were built at every client's start
// (sbatch and squeue too), a sort of the registry each.
func SrunOptions() []Opt   { return GetoptTable(Srun) }
func SallocOptions() []Opt { return GetoptTable(Salloc) }

// EnvValues returns the option values command c's input variables set
// (SLURM_* for srun, SALLOC_* for salloc), to be placed before the
// command line's, which then win. Name is the variable's name.
func EnvValues(c Command, env []string) []Value {
	m := map[string]string{}
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	var out []Value
	for _, s := range envSettingsFor(c, m) {
		out = append(out, Value{Key: s.key, Name: strings.TrimPrefix(s.where, "environment variable "), Val: s.val, Set: true})
	}
	return out
}

// stepOnly are the options whose srun meaning belongs to the step, not to
// the allocation srun may create: its tasks' files.
var stepOnly = map[string]bool{"output": true, "error": true, "input": true, "open-mode": true}

// AllocSpec builds the job of an allocation made by srun or salloc (c)
// from option values, through the registry's setters; errors are in
// Slurm's words, as for sbatch.
func AllocSpec(c Command, in Input, vals []Value) (*api.JobSpec, error) {
	// An allocation is never requeued: its client waits on this run.
	spec := &api.JobSpec{WorkDir: in.Cwd, SubmitHost: in.Hostname, Alloc: true, NoRequeue: true}
	st := &state{cmd: c, spec: spec, flags: &Flags{}, in: in}
	for _, v := range vals {
		o := Lookup(c, v.Key)
		if o == nil || o.Set == nil || stepOnly[v.Key] {
			continue
		}
		if err := o.Set(st, o, v.Val); err != nil {
			e := &Error{Msg: "error: " + err.Error(), Exit: exitOption}
			var oe *optError
			if errors.As(err, &oe) && oe.exit != 0 {
				e.Exit = oe.exit
			}
			return nil, e
		}
	}
	if err := st.finish(); err != nil {
		return nil, err
	}
	return spec, nil
}
