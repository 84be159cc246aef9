package sbatch

import (
	"errors"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Fuzz targets for the parsers of issue 16's round (make fuzz runs each for
// a while; a plain go test replays the seeds and testdata/fuzz/<name>/).

// FuzzArray: an accepted --array value has its tasks sorted, unique and in
// [0, max); printed as squeue folds them (plus its throttle) it reads back
// to the same tasks and throttle.
func FuzzArray(f *testing.F) {
	for _, s := range []string{"0-15", "1,3,5-7", "0-20:4%2", "7%0", "1-3,2-4", "0-1000", "1001", "-1", "3-1",
		"1:2", "0-9:0", "%3", "", ",", "1,,2", "00-03", "4294967296", "1-2%-1"} {
		f.Add(s, 1001)
	}
	f.Add("0-99", 50)
	f.Fuzz(func(t *testing.T, s string, maxSize int) {
		maxSize = max(1, min(maxSize, 1<<20)) // a huge range would only spend memory
		a, ok := ParseArray(s, maxSize)
		if !ok {
			if len(a.Tasks) != 0 || a.Throttle != 0 {
				t.Fatalf("%q refused but returned %+v", s, a)
			}
			return
		}
		if len(a.Tasks) == 0 {
			t.Fatalf("%q accepted with no task", s)
		}
		for i, id := range a.Tasks {
			if id < 0 || id >= int64(maxSize) || (i > 0 && id <= a.Tasks[i-1]) {
				t.Fatalf("%q (max %d): tasks %v not ascending, unique and in range", s, maxSize, a.Tasks)
			}
		}
		text := FormatArrayTasks(a.Tasks)
		if a.Throttle > 0 {
			text += "%" + strconv.Itoa(a.Throttle)
		}
		back, ok := ParseArray(text, maxSize)
		if !ok || !slices.Equal(back.Tasks, a.Tasks) || back.Throttle != a.Throttle {
			t.Fatalf("%q → %+v printed %q → %+v (%v)", s, a, text, back, ok)
		}
	})
}

// FuzzDependency: an accepted --dependency prints (as squeue %E, terms
// joined by its separator) back to the same terms, and no term has a job
// id ≤ 0 or a negative delay.
func FuzzDependency(f *testing.F) {
	for _, s := range []string{"afterok:7", "afterany:7_*:8_3+5", "after:1+0,singleton", "afterok:1?afternotok:2",
		"a,b?c", "afterok:", "afterok:0", "afterok:-1", "afterok:7_", "after:7+-1", "singleton?singleton", "afterok:1:2:3",
		"aftercorr:9_*", "afterok:99999999999999999999", "afterok:7+", ",,"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, ok := ParseDependency(s)
		if !ok {
			if !d.Empty() {
				t.Fatalf("%q refused but returned %+v", s, d)
			}
			return
		}
		var parts []string
		for _, term := range d.Terms {
			if term.Kind != DepSingleton && (term.JobID <= 0 || term.Minutes < 0 || term.Task < AllTasks) {
				t.Fatalf("%q: bad term %+v", s, term)
			}
			parts = append(parts, term.TermText())
		}
		text := strings.Join(parts, d.Separator())
		back, ok := ParseDependency(text)
		if !ok || !slices.Equal(back.Terms, d.Terms) || (len(d.Terms) > 1 && back.Any != d.Any) {
			t.Fatalf("%q → %+v printed %q → %+v (%v)", s, d, text, back, ok)
		}
	})
}

// FuzzSbatchCommandLine drives the option table the way sbatch, srun and
// salloc do: argv (NUL-separated words) and a script with #SBATCH lines.
// Whatever the input, the answer is a spec or a refusal in Slurm's form —
// an *Error with a message and exit 1 (file, script) or 255 (option), or
// --help/--usage/--version — never a panic; a refused option is named in
// the message.
func FuzzSbatchCommandLine(f *testing.F) {
	for _, s := range [][2]string{
		{"-N\x002\x00-t\x0010\x00job.sh", "#!/bin/sh\n#SBATCH -J x\necho\n"},
		{"--array=0-3%1\x00--dependency=afterok:1\x00job.sh", "#!/bin/sh\n"},
		{"--wrap\x00true\x00--mem=1G\x00-c\x002", ""},
		{"-t\x00bogus\x00job.sh", "#!/bin/sh\n"},
		{"--gres=gpu:2\x00--constraint=a&b\x00job.sh", "#!/bin/sh\n#SBATCH --nodes=1-2 --ntasks-per-node=3\n"},
		{"job.sh", "#!/bin/sh\n#SBATCH --begin=now+1hour -o %x.%j.out\n#SBATCH --bogus\n"},
		{"--export=ALL,A=1\x00--signal=B:USR1@60\x00job.sh", "#!/bin/sh\n"},
		{"-n\x00-3\x00job.sh", "no shebang\n"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, args, script string) {
		argv := strings.Split(args, "\x00")
		in := Input{Argv: argv, Env: []string{"PATH=/bin"}, Cwd: "/home/u", Stdin: strings.NewReader(script),
			ReadFile: func(p string) ([]byte, error) {
				if p == "/home/u/job.sh" {
					return []byte(script), nil
				}
				return nil, fs.ErrNotExist
			},
			Now: testNow, Hostname: "login1"}
		spec, _, err := BuildSpec(in)
		checkRefusal(t, "sbatch", argv, err)
		if err == nil && spec == nil {
			t.Fatalf("sbatch %q: no spec and no error", argv)
		}
		for _, c := range []Command{Srun, Salloc} {
			p, err := ParseCommandLine(c, argv)
			checkRefusal(t, c.String(), argv, err)
			if err != nil {
				continue
			}
			_, err = AllocSpec(c, in, p.Values)
			checkRefusal(t, c.String(), argv, err)
		}
	})
}

func checkRefusal(t *testing.T, cmd string, argv []string, err error) {
	t.Helper()
	if err == nil || errors.Is(err, ErrHelp) || errors.Is(err, ErrUsage) || errors.Is(err, ErrVersion) {
		return
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("%s %q: error %T %v, want *Error", cmd, argv, err, err)
	}
	if strings.TrimSpace(e.Msg) == "" || (e.Exit != exitFile && e.Exit != exitOption) {
		t.Fatalf("%s %q: refusal %+v: want a message and exit 1 or 255", cmd, argv, e)
	}
}

// FuzzQsubResources: qsub -l lists and #PBS directives, both flavours.
// A refusal is a *PBSError whose text names qsub, with a non-zero exit; an accepted job has a name and its PBS marks.
func FuzzQsubResources(f *testing.F) {
	for _, s := range [][2]string{
		{"walltime=1:00:00,nodes=2:ppn=4", "#!/bin/sh\n#PBS -N a\n"},
		{"select=2:ncpus=2:mem=1gb", "#!/bin/sh\n#PBS -l walltime=10:00\n"},
		{"mem=-1", ""},
		{"nodes=0", "#PBS -l nodes=1:ppn=x\n"},
		{"select=1:ncpus=1+1:ncpus=2", ""},
		{"ncpus=4,mem=2gb,walltime=bogus", "#PBS -W depend=afterok:1\n"},
		{"'nodes=2',\"x=y\"", "#PBS -l ngpus=1\n"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, list, directives string) {
		script := "#!/bin/sh\n" + directives + "\necho\n"
		for _, fl := range []string{FlavourOpenPBS, FlavourTorque} {
			sp, _, err := BuildQsubSpec(qsubIn(fl, script, "-l", list, "job.sh"))
			if err != nil {
				var pe *PBSError
				if !errors.As(err, &pe) {
					t.Fatalf("%s -l %q: error %T %v, want *PBSError", fl, list, err, err)
				}
				// OpenPBS says "qsub: ..."; Torque "[qsub: illegal -l value]".
				if pe.Exit == 0 || !strings.Contains(pe.Text, "qsub") {
					t.Fatalf("%s -l %q: refusal %q exit %d: want qsub's text and a non-zero exit", fl, list, pe.Text, pe.Exit)
				}
				continue
			}
			if sp.PBS == nil || sp.Name == "" {
				t.Fatalf("%s -l %q accepted without PBS marks or name: %+v", fl, list, sp)
			}
			if sp.TimeLimit < 0 && sp.TimeLimit != -1 {
				t.Fatalf("%s -l %q: time limit %d", fl, list, sp.TimeLimit)
			}
		}
	})
}
