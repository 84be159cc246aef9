package replay

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"hora/replay/swf"
)

// WriteMarkdown writes the summary as Markdown tables.
func WriteMarkdown(w io.Writer, s *Summary) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "## hora replay: %s\n\n", filepath.Base(s.Workload))
	fmt.Fprintf(bw, "%s, policy %s, engine %s, %d processors (%d nodes × %d cores)", s.Mode, s.Policy, s.Engine,
		s.Procs, s.Nodes, s.CoresPerNode)
	if s.KillAtLimit {
		fmt.Fprint(bw, ", jobs killed at their requested time")
	}
	fmt.Fprintf(bw, "; %d warm-up jobs left out.\n\n", s.WarmupDropped)
	fmt.Fprintln(bw, "| metric | value |")
	fmt.Fprintln(bw, "|---|---:|")
	row := func(k, v string) { fmt.Fprintf(bw, "| %s | %s |\n", k, v) }
	row("jobs", strconv.Itoa(s.Jobs))
	row("admitted", strconv.Itoa(s.Admitted))
	row("rejected", strconv.Itoa(s.Rejected))
	row("reject ratio", f4(s.RejectRatio))
	row("never started", strconv.Itoa(s.NeverStarted))
	row("killed at limit", strconv.Itoa(s.Killed))
	row("deadline misses", fmt.Sprintf("%d of %d", s.DeadlineMisses, s.DeadlineJobs))
	row("deadline miss ratio", f4(s.DeadlineMissRatio))
	row("job loss rate", f4(s.JobLossRate))
	row("work loss rate", f4(s.WorkLossRate))
	row("fairness index (eq. 3.1)", f4(s.Fairness))
	row("loss rate of the 10% largest jobs", f4(s.LargeJobLoss))
	row("avg wait (s)", f1(s.AvgWait))
	row("avg wait (min)", f1(s.AvgWait/60))
	row("avg delay beyond ready time (s)", f1(s.AvgDelay))
	row("median wait (s)", f1(s.MedianWait))
	row("max wait (h)", f1(s.MaxWait/3600))
	row("avg response (s)", f1(s.AvgResponse))
	row("avg bsld (τ = 10 s)", f4(s.AvgBsld))
	row("max bsld", f1(s.MaxBsld))
	row("temporal penalty W/l (thesis §5.5)", f4(s.TemporalPenalty))
	if s.AvgRetries != nil {
		row("avg retries (Table 5.3)", f4(*s.AvgRetries))
	}
	row("utilization", f4(s.Utilization))
	row("utilization, first to last arrival", f4(s.UtilizationArrivals))
	row("makespan (s)", f1(s.Makespan))
	groups := func(title string, gs []Group) {
		if len(gs) == 0 {
			return
		}
		retries := s.AvgRetries != nil
		fmt.Fprintf(bw, "\n| %s | jobs | rejected | deadline misses | avg wait (s) | avg response (s) | avg bsld | job loss | temporal penalty | spatial penalty (s) |", title)
		if retries {
			fmt.Fprint(bw, " avg retries |")
		}
		fmt.Fprint(bw, "\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
		if retries {
			fmt.Fprint(bw, "---:|")
		}
		fmt.Fprintln(bw)
		for _, g := range gs {
			fmt.Fprintf(bw, "| %s | %d | %d | %d | %s | %s | %s | %s | %s | %s |", g.Name, g.Jobs, g.Rejected, g.Misses,
				f1(g.AvgWait), f1(g.AvgResponse), f4(g.AvgBsld), f4(g.LossRate), f4(g.TemporalPenalty), f1(g.SpatialPenalty))
			if retries {
				r := "–"
				if g.AvgRetries != nil {
					r = f4(*g.AvgRetries)
				}
				fmt.Fprintf(bw, " %s |", r)
			}
			fmt.Fprintln(bw)
		}
	}
	groups("class", s.Classes)
	groups("size (procs)", s.SizeBins)
	if in := s.Input; in != nil {
		fmt.Fprintf(bw, "\nInput: %d records, %d kept.\n", in.Records, in.Kept)
		if len(in.Skipped)+len(in.Repaired) > 0 {
			fmt.Fprintln(bw, "\n| input issue | records kept | records skipped |")
			fmt.Fprintln(bw, "|---|---:|---:|")
			for i := range swf.NumIssues {
				if in.Repaired[i.Key()]+in.Skipped[i.Key()] > 0 {
					fmt.Fprintf(bw, "| %s | %d | %d |\n", i, in.Repaired[i.Key()], in.Skipped[i.Key()])
				}
			}
		}
	}
	return bw.Flush()
}

func f1(x float64) string { return strconv.FormatFloat(x, 'f', 1, 64) }
func f4(x float64) string { return strconv.FormatFloat(x, 'f', 4, 64) }

// WriteJSON writes the summary as one JSON object.
func WriteJSON(w io.Writer, s *Summary) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(s)
}

// WriteJobsCSV writes one line per job.
func WriteJobsCSV(w io.Writer, o *Outcome) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, "job,submit,procs,nodes,limit,run,deadline,class,admitted,rejected,started,start,end,wait,bsld,killed,reason,temporal_penalty,retries")
	for i := range o.Workload.Jobs {
		j, r := &o.Workload.Jobs[i], &o.Results[i]
		wait, bsld, tpen, retries := "", "", "", ""
		start, end := "", ""
		if r.Started {
			wait = g(r.Start - j.Submit)
			bsld = f4(Bsld(r.Start-j.Submit, r.End-r.Start))
			tpen = f4(TemporalPenalty(r.Start-j.ready(), r.End-r.Start))
			start, end = g(r.Start), g(r.End)
			if o.Retries {
				retries = strconv.Itoa(r.Retries)
			}
		}
		limit := ""
		if finite(j.Limit) {
			limit = g(j.Limit)
		}
		fmt.Fprintf(bw, "%d,%s,%d,%d,%s,%s,%s,%s,%t,%t,%t,%s,%s,%s,%s,%t,%s,%s,%s\n", j.ID, g(j.Submit), j.Procs, r.Nodes,
			limit, g(j.Run), g(j.Deadline), j.Class(), r.Admitted, r.Rejected, r.Started, start, end, wait, bsld,
			r.Killed, csvQuote(r.Reason), tpen, retries)
	}
	return bw.Flush()
}

func g(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }

func csvQuote(s string) string {
	if !strings.ContainsAny(s, ",\"\n") {
		return s
	}
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}

// WriteSWF writes the simulated schedule as an SWF log: field 3 is the
// simulated wait and field 4 the simulated run; rejected or never started
// jobs have wait and run -1 and status 5 (cancelled); jobs killed at their
// limit have status 0 (failed).
func WriteSWF(w io.Writer, o *Outcome, note string) error {
	h := slices.Clone(o.Workload.Header)
	h = append(h, swf.HeaderLine{Key: "Note", Value: note})
	recs := make([]swf.Record, len(o.Workload.Jobs))
	for i := range o.Workload.Jobs {
		j, r := &o.Workload.Jobs[i], &o.Results[i]
		rec := j.Record
		rec.Job, rec.Submit = int64(j.ID), int64(math.Round(j.Submit))
		if r.Started {
			rec.Wait = int64(math.Round(r.Start - j.Submit))
			rec.Run = int64(math.Round(r.End - r.Start))
			rec.Alloc = int64(r.Nodes * o.Cores)
			rec.Status = swf.StatusCompleted
			if r.Killed {
				rec.Status = swf.StatusFailed
			}
		} else {
			rec.Wait, rec.Run, rec.Alloc, rec.Status = -1, -1, -1, swf.StatusCancelled
		}
		recs[i] = rec
	}
	return swf.Write(w, h, recs)
}

// WriteOutDir writes jobs.csv, summary.json and three SVG plots into dir.
func WriteOutDir(dir string, o *Outcome, s *Summary) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	files := []struct {
		name  string
		write func(io.Writer) error
	}{
		{"jobs.csv", func(w io.Writer) error { return WriteJobsCSV(w, o) }},
		{"summary.json", func(w io.Writer) error { return WriteJSON(w, s) }},
		{"utilization.svg", func(w io.Writer) error { return plotUtilization(w, o) }},
		{"wait-cdf.svg", func(w io.Writer) error { return plotWaitCDF(w, o, s.WarmupDropped) }},
		{"bsld-by-size.svg", func(w io.Writer) error { return plotBsldBySize(w, s) }},
	}
	for _, f := range files {
		if err := writeFile(filepath.Join(dir, f.name), f.write); err != nil {
			return err
		}
	}
	return nil
}

func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	return f.Close()
}
