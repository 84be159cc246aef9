package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestPBSEndToEnd drives a real horad with the PBS commands in both
// flavours: a qsub job and an sbatch job are listed by qstat and squeue
// alike, the qsub job gets PBS's environment and output files, another
// user's qdel is refused, and bad input creates nothing.
func TestPBSEndToEnd(t *testing.T) {
	requireRoot(t)
	for _, fl := range []string{"openpbs", "torque"} {
		t.Run(fl, func(t *testing.T) { pbsEndToEnd(t, fl) })
	}
}

func pbsEndToEnd(t *testing.T, flavour string) {
	c := newClusterWith(t, localBatch+"\n[pbs]\nflavour = \""+flavour+"\"\nserver = \"headnode\"\n")
	work := c.workDir()
	home := os.Getenv("HOME")
	if home == "" {
		home = "/root"
	}
	res := "select=1:ncpus=2"
	if flavour == "torque" {
		res = "nodes=1:ppn=2"
	}
	script := writeScript(t, work, "pbsjob.sh", "#!/bin/sh\n#PBS -N pbsjob\n#PBS -l walltime=00:05:00\n#PBS -l "+res+"\n"+
		"echo \"id=$PBS_JOBID name=$PBS_JOBNAME queue=$PBS_QUEUE env=$PBS_ENVIRONMENT\"\n"+
		"echo \"pwd=$(pwd) workdir=$PBS_O_WORKDIR host=$PBS_O_HOST\"\n"+
		"echo \"slots=$(wc -l < $PBS_NODEFILE) tmp=$(test -d \"$TMPDIR\" && echo yes)\"\n"+
		"echo \"$TMPDIR\" > "+filepath.Join(work, "tmpdir.txt")+"\n"+
		"echo oops >&2\n")
	r := c.run(0, work, "qsub", script)
	m := regexp.MustCompile(`^(\d+)\.headnode\n$`).FindStringSubmatch(r.stdout)
	if r.code != 0 || m == nil {
		t.Fatalf("qsub: %+v", r)
	}
	seq := m[1]
	c.waitState(seq, "COMPLETED")

	out, err := os.ReadFile(filepath.Join(work, "pbsjob.o"+seq))
	if err != nil {
		t.Fatal(err)
	}
	want := "id=" + seq + ".headnode name=pbsjob queue=batch env=PBS_BATCH\n" +
		"pwd=" + home + " workdir=" + work + " host="
	if !strings.HasPrefix(string(out), want) || !strings.Contains(string(out), "\nslots=2 tmp=yes\n") {
		t.Errorf("job output %q, want it to start %q and hold slots=2 tmp=yes", out, want)
	}
	if e, _ := os.ReadFile(filepath.Join(work, "pbsjob.e"+seq)); string(e) != "oops\n" {
		t.Errorf("error file %q", e)
	}
	if tmp, _ := os.ReadFile(filepath.Join(work, "tmpdir.txt")); len(tmp) < 2 {
		t.Errorf("no TMPDIR recorded")
	} else if _, err := os.Stat(strings.TrimSpace(string(tmp))); err == nil {
		t.Errorf("TMPDIR %s left behind", tmp)
	}
	// The finished job, as each flavour shows it.
	if flavour == "openpbs" {
		r = c.run(0, work, "qstat", "-x", "-f", seq)
		if r.code != 0 || !strings.Contains(r.stdout, "Job Id: "+seq+".headnode\n") ||
			!strings.Contains(r.stdout, "    job_state = F\n") || !strings.Contains(r.stdout, "    Exit_status = 0\n") {
			t.Errorf("qstat -x -f: %+v", r)
		}
		// resources_used.mem is the batch step's peak RSS, measured at the
		// end (a shell and echo use some hundreds of kB at least).
		if !regexp.MustCompile(`(?m)^    resources_used\.mem = [1-9]\d*kb$`).MatchString(r.stdout) ||
			!regexp.MustCompile(`(?m)^    resources_used\.cput = \d\d:\d\d:\d\d$`).MatchString(r.stdout) {
			t.Errorf("qstat -x -f resources_used:\n%s", r.stdout)
		}
		r = c.run(0, work, "qstat", seq)
		if r.code != 35 || r.stderr != "qstat: "+seq+".headnode Job has finished, use -x or -H to obtain historical job information\n" {
			t.Errorf("qstat of a finished job: %+v", r)
		}
	} else {
		r = c.run(0, work, "qstat", "-f", seq)
		if r.code != 0 || !strings.Contains(r.stdout, "    job_state = C\n") || !strings.Contains(r.stdout, "    exit_status = 0\n") {
			t.Errorf("qstat -f: %+v", r)
		}
		// A Torque host list runs the job on exactly those hosts.
		hs := writeScript(t, work, "hosts.sh", "#!/bin/sh\ncat \"$PBS_NODEFILE\"\n")
		r = c.run(0, work, "qsub", "-N", "hosts", "-l", "nodes=local2:ppn=2+local4:ppn=2", hs)
		hseq := strings.TrimSuffix(strings.TrimSpace(r.stdout), ".headnode")
		if r.code != 0 {
			t.Fatalf("qsub -l nodes=local2+local4: %+v", r)
		}
		c.waitState(hseq, "COMPLETED")
		if out, err := os.ReadFile(filepath.Join(work, "hosts.o"+hseq)); string(out) != "local2\nlocal2\nlocal4\nlocal4\n" {
			t.Errorf("host list job's nodefile %q (%v)", out, err)
		}
		before := c.run(0, work, "squeue", "-h", "-t", "all", "-o", "%i").stdout
		r = c.run(0, work, "qsub", "-l", "nodes=local2+nosuch", hs)
		if r.code == 0 || r.stderr != "qsub: submit error (Requested node configuration is not available)\n" {
			t.Errorf("qsub of an unknown host: %+v", r)
		}
		if after := c.run(0, work, "squeue", "-h", "-t", "all", "-o", "%i").stdout; after != before {
			t.Errorf("a refused host list created a job: %q → %q", before, after)
		}
	}

	// An array (OpenPBS -J, Torque -t), held: qsub prints <seq>[], qstat -t
	// lists its subjobs; released with qrls <seq>[], each subjob sees its
	// PBS ids and writes its own files.
	arrOpt, sep := "-J", "."
	if flavour == "torque" {
		arrOpt, sep = "-t", "-"
	}
	ascript := writeScript(t, work, "arr.sh", "#!/bin/sh\n"+
		"echo \"id=$PBS_JOBID index=$PBS_ARRAY_INDEX array=$PBS_ARRAY_ID tq=$PBS_ARRAYID name=$PBS_JOBNAME\"\n")
	r = c.run(0, work, "qsub", "-h", "-N", "arr", arrOpt, "1-3", ascript)
	m = regexp.MustCompile(`^(\d+)\[\]\.headnode\n$`).FindStringSubmatch(r.stdout)
	if r.code != 0 || m == nil {
		t.Fatalf("qsub %s 1-3: %+v", arrOpt, r)
	}
	aseq := m[1]
	r = c.run(0, work, "qstat", "-t")
	for i := 1; i <= 3; i++ {
		if !regexp.MustCompile(`(?m)^` + aseq + `\[` + strconv.Itoa(i) + `\]\.headnode\s.* H batch`).MatchString(r.stdout) {
			t.Errorf("qstat -t does not list subjob %d held:\n%s", i, r.stdout)
		}
	}
	if flavour == "openpbs" {
		r = c.run(0, work, "qstat", "-J")
		if !regexp.MustCompile(`(?m)^`+aseq+`\[\]\.headnode\s.* H batch`).MatchString(r.stdout) || strings.Contains(r.stdout, aseq+"[1]") {
			t.Errorf("qstat -J:\n%s", r.stdout)
		}
	}
	// qselect names the array once (OpenPBS) or its subjobs (Torque, -T).
	wantSel := aseq + "[].headnode\n"
	if flavour == "torque" {
		wantSel = aseq + "[1].headnode\n" + aseq + "[2].headnode\n" + aseq + "[3].headnode\n"
	}
	if r = c.run(0, work, "qselect", "-s", "H", "-N", "arr"); r.stdout != wantSel {
		t.Errorf("qselect -s H -N arr: %+v, want %q", r, wantSel)
	}
	if r = c.run(0, work, "qrls", aseq+"[]"); r.code != 0 {
		t.Errorf("qrls %s[]: %+v", aseq, r)
	}
	for i := 1; i <= 3; i++ {
		c.waitState(aseq+"_"+strconv.Itoa(i), "COMPLETED")
		idx := strconv.Itoa(i)
		out, err := os.ReadFile(filepath.Join(work, "arr.o"+aseq+sep+idx))
		want := "id=" + aseq + "[" + idx + "].headnode index=" + idx + " array=" + aseq + "[].headnode tq= name=arr\n"
		if flavour == "torque" {
			want = "id=" + aseq + "[" + idx + "].headnode index= array= tq=" + idx + " name=arr-" + idx + "\n"
		}
		if err != nil || string(out) != want {
			t.Errorf("subjob %d output %q (%v), want %q", i, out, err, want)
		}
	}

	// -W block=true: qsub waits and exits with the job's exit status.
	r = c.run(0, work, "qsub", "-W", "block=true", "-N", "blocker", "--", "/bin/sh", "-c", "exit 3")
	if r.code != 3 || !strings.HasSuffix(r.stdout, ".headnode\n") {
		t.Errorf("qsub -W block=true: %+v", r)
	}

	// A qsub job and an sbatch job, both running: qstat and squeue list both.
	r = c.run(0, work, "qsub", "-N", "pbssleep", "--", "/bin/sleep", "300")
	qid := strings.TrimSuffix(strings.TrimSpace(r.stdout), ".headnode")
	if r.code != 0 || qid == "" {
		t.Fatalf("qsub -- sleep: %+v", r)
	}
	sid := c.submit(work, "-J", "slurmsleep", "--wrap", "sleep 300")
	c.waitState(qid, "RUNNING")
	c.waitState(sid, "RUNNING")
	r = c.run(0, work, "qstat")
	for _, id := range []string{qid, sid} {
		if !regexp.MustCompile(`(?m)^` + id + `\.headnode\s+\S+\s+root\s+\S+ R batch`).MatchString(r.stdout) {
			t.Errorf("qstat does not list %s running:\n%s", id, r.stdout)
		}
	}
	r = c.run(0, work, "squeue", "-h", "-o", "%i %j %t")
	for _, line := range []string{qid + " pbssleep R", sid + " slurmsleep R"} {
		if !strings.Contains(r.stdout, line+"\n") {
			t.Errorf("squeue does not list %q:\n%s", line, r.stdout)
		}
	}
	r = c.run(0, work, "qselect", "-s", "R")
	if r.stdout != qid+".headnode\n"+sid+".headnode\n" {
		t.Errorf("qselect -s R: %q", r.stdout)
	}

	// Another user's qdel is refused and changes nothing; the owner's works,
	// on the sbatch job too.
	r = c.run(65534, "/", "qdel", qid)
	if r.code != 159 || r.stderr != "qdel: Unauthorized Request  "+qid+".headnode\n" {
		t.Errorf("qdel as nobody: %+v", r)
	}
	if got := c.state(qid); got != "RUNNING" {
		t.Errorf("after nobody's qdel the job is %s", got)
	}
	r = c.run(0, work, "qdel", qid, sid+".headnode")
	if r.code != 0 || r.stderr != "" {
		t.Errorf("qdel by owner: %+v", r)
	}
	c.waitState(qid, "CANCELLED")
	c.waitState(sid, "CANCELLED")

	// qalter: a held job gets a new name, limit and begin time, which
	// survive a kill -9 of horad; another user's qalter changes nothing.
	r = c.run(0, work, "qsub", "-h", "-N", "before", "--", "/bin/true")
	aid := strings.TrimSuffix(strings.TrimSpace(r.stdout), ".headnode")
	if r = c.run(65534, "/", "qalter", "-N", "stolen", aid); r.code != 159 {
		t.Errorf("qalter as nobody: %+v", r)
	}
	if r = c.run(0, work, "qalter", "-N", "after", "-l", "walltime=00:10:00", "-a", "203001011200", aid); r.code != 0 || r.stderr != "" {
		t.Errorf("qalter: %+v", r)
	}
	c.kill9()
	c.start()
	r = c.run(0, work, "squeue", "-h", "-j", aid, "-o", "%j %l %T %r")
	if r.stdout != "after 10:00 PENDING JobHeldUser\n" {
		t.Errorf("altered job after a restart: %+v", r)
	}
	if r = c.run(0, work, "qalter", "-h", "n", "-a", "0001010000", aid); r.code != 0 {
		t.Errorf("qalter -h n: %+v", r)
	}
	c.waitState(aid, "COMPLETED")

	// Bad input: the flavour's text and exit status, and no job.
	before := c.run(0, work, "squeue", "-h", "-t", "all", "-o", "%i").stdout
	bad := []struct {
		args []string
		text string
		code int
	}{
		{[]string{"-l", "walltime=banana", script}, map[string]string{"openpbs": "qsub: Illegal attribute or resource value\n",
			"torque": "qsub: submit error (Illegal attribute or resource value for Resource_List.walltime)\n"}[flavour], 166},
		{[]string{writeScript(t, work, "dir.sh", "#!/bin/sh\n#PBS -Y\n")}, map[string]string{"openpbs": "qsub: invalid option -- 'Y'\nqsub: directive error: -Y \n",
			"torque": "qsub: invalid option -- 'Y'\n[exiting]\n"}[flavour], map[string]int{"openpbs": 1, "torque": 2}[flavour]},
	}
	bad = append(bad, struct {
		args []string
		text string
		code int
	}{[]string{"-q", "nosuch", script}, map[string]string{"openpbs": "qsub: Unknown queue\n",
		"torque": "qsub: submit error (Unknown queue)\n"}[flavour], 170})
	if flavour == "openpbs" {
		bad = append(bad, struct {
			args []string
			text string
			code int
		}{[]string{writeScript(t, work, "dos.sh", "#!/bin/sh\r\necho hi\r\n")}, "qsub: script contains cr, lf\n", 1})
	}
	for _, b := range bad {
		r = c.run(0, work, "qsub", b.args...)
		if r.code != b.code || !strings.HasPrefix(r.stderr, b.text) || r.stdout != "" {
			t.Errorf("qsub %v: %+v, want exit %d and %q", b.args, r, b.code, b.text)
		}
	}
	r = c.run(0, work, "qdel", "12x")
	if r.code != 1 || r.stderr != "qdel: illegally formed job identifier: 12x\n" {
		t.Errorf("qdel 12x: %+v", r)
	}
	if after := c.run(0, work, "squeue", "-h", "-t", "all", "-o", "%i").stdout; after != before {
		t.Errorf("bad input changed the queue:\n%s\nthen\n%s", before, after)
	}
}
