package controller

import (
	"bytes"
	"context"
	"encoding/gob"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"hora/api"
	"hora/nodes"
	"hora/scheduler"
	"hora/store"
)

// Listen opens the Unix socket: any local user may connect (identity comes
// from the kernel, not from the socket's mode), and a stale socket file left
// by a crashed horad is replaced only when nothing answers on it.
func Listen(path string) (net.Listener, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	if c, err := net.DialTimeout("unix", path, 200*time.Millisecond); err == nil {
		c.Close()
		return nil, fmt.Errorf("another horad is already serving %s", path)
	}
	_ = os.Remove(path)
	l, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(path, 0o666); err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}

// Server returns the HTTP server for the socket protocol.
func (c *Controller) Server() *http.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+api.PathSubmit, c.handle(c.hSubmit))
	mux.HandleFunc("GET "+api.PathJobs, c.handle(c.hJobs))
	mux.HandleFunc("POST "+api.PathCancel, c.handle(c.hCancel))
	mux.HandleFunc("POST "+api.PathHold, c.handle(c.hHold(true)))
	mux.HandleFunc("POST "+api.PathRelease, c.handle(c.hHold(false)))
	mux.HandleFunc("POST "+api.PathUpdate, c.handle(c.hUpdate))
	mux.HandleFunc("GET "+api.PathConfig, c.handle(c.hConfig))
	mux.HandleFunc("GET "+api.PathNodes, c.handle(c.hNodes))
	mux.HandleFunc("GET "+api.PathPartitions, c.handle(c.hPartitions))
	mux.HandleFunc("GET "+api.PathPing, c.handle(c.hPing))
	mux.HandleFunc("GET "+api.PathReservations, c.handle(c.hReservations))
	mux.HandleFunc("POST "+api.PathReservationCreate, c.handle(c.hResvChange("create")))
	mux.HandleFunc("POST "+api.PathReservationUpdate, c.handle(c.hResvChange("update")))
	mux.HandleFunc("POST "+api.PathReservationDelete, c.handle(c.hResvChange("delete")))
	mux.HandleFunc("GET "+api.PathFree, c.handle(c.hFree))
	mux.HandleFunc("GET "+api.PathStats, c.handle(c.hStats))
	mux.HandleFunc("POST "+api.PathReconfigure, c.handle(c.hReconfigure))
	mux.HandleFunc("GET "+api.PathBackup, c.hBackup)
	c.routeNodeOps(mux)
	c.routeSteps(mux)
	c.routeRemoteSteps(mux)
	return &http.Server{
		Handler:           c.untilRecovered(mux),
		ConnContext:       connContext,
		ReadHeaderTimeout: 10 * time.Second,
		// An idle keep-alive connection is closed after a minute: without
		// it (and without ReadTimeout, which would cut srun's streams) a
		// client that connects, asks once and stays holds its connection,
		// and a slot of [limits]'s max_connections, for ever.
		IdleTimeout: 60 * time.Second,
		ErrorLog:    slog.NewLogLogger(c.log.Handler(), slog.LevelWarn),
	}
}

type handlerFunc func(ctx context.Context, who *Caller, r *http.Request) (any, error)

// handle authenticates the caller by SO_PEERCRED and writes JSON answers;
// errors become api.Error bodies with a fitting status.
func (c *Controller) handle(h handlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		who, err := callerFrom(r.Context())
		if err != nil {
			writeJSON(w, http.StatusUnauthorized, &api.Error{Message: "Access/permission denied: " + err.Error(), Code: api.CodeAccessDenied})
			return
		}
		if c.rateLimited(who) {
			// Refused before anything is read or done: the client may
			// send the same request again, a submission included.
			c.log.Debug("rate limited", "path", r.URL.Path, "uid", who.UID)
			writeJSON(w, http.StatusTooManyRequests, rateLimitError())
			return
		}
		if r.Method == http.MethodPost {
			// decode bounds the body's reading through it (bodyTimeout).
			r = r.WithContext(context.WithValue(r.Context(), respCtlKey{}, http.NewResponseController(w)))
		}
		out, err := h(r.Context(), who, r)
		if err != nil {
			var ae *api.Error
			if !errors.As(err, &ae) {
				ae = &api.Error{Message: err.Error(), Code: api.CodeInternal}
			}
			status := http.StatusBadRequest
			switch ae.Code {
			case api.CodeInternal:
				status = http.StatusInternalServerError
			case api.CodeAccessDenied:
				status = http.StatusForbidden
			case api.CodeInvalidJobID:
				status = http.StatusNotFound
			}
			c.log.Debug("request refused", "path", r.URL.Path, "uid", who.UID, "err", ae.Message)
			writeJSON(w, status, ae)
			return
		}
		if el, ok := out.(*encodedListing); ok {
			// Sent with its length rather than in chunks.
			w.Header().Set("Content-Type", api.MediaListing)
			w.Header().Set("Content-Length", strconv.Itoa(el.len()))
			w.WriteHeader(http.StatusOK)
			for _, bp := range el.parts {
				if _, err := w.Write(*bp); err != nil {
					break
				}
			}
			// The client has all of it before the buffers are parked.
			if fl, ok := w.(http.Flusher); ok {
				fl.Flush()
			}
			el.release()
			return
		}
		if jr, ok := out.(*api.JobsResponse); ok {
			defer listings.put(jr.Jobs)
			if r.Header.Get("Accept") == api.MediaListing {
				// Encoded into one buffer, outside the controller's lock,
				// and sent with its length rather than in chunks.
				bp := listings.buf()
				*bp = api.AppendListing((*bp)[:0], jr.Jobs)
				w.Header().Set("Content-Type", api.MediaListing)
				w.Header().Set("Content-Length", strconv.Itoa(len(*bp)))
				w.WriteHeader(http.StatusOK)
				_, _ = w.Write(*bp)
				// The client has all of it before the buffers are cleared
				// and parked (deferred above).
				if fl, ok := w.(http.Flusher); ok {
					fl.Flush()
				}
				listings.putBuf(bp)
				return
			}
		}
		if r.Header.Get("Accept") == api.MediaGob {
			if jr, ok := out.(*api.JobsResponse); ok {
				w.Header().Set("Content-Type", api.MediaGob)
				w.WriteHeader(http.StatusOK)
				_ = gob.NewEncoder(w).Encode(jr)
				return
			}
		}
		writeJSON(w, http.StatusOK, out)
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// bodyTimeout bounds the reading of a request's body: a client that
// announces more than it sends (a truncating or stalled client) is cut off
// instead of holding a goroutine and a connection for ever.
const bodyTimeout = 30 * time.Second

type respCtlKey struct{}

func decode(r *http.Request, v any) error {
	if rc, ok := r.Context().Value(respCtlKey{}).(*http.ResponseController); ok {
		_ = rc.SetReadDeadline(time.Now().Add(bodyTimeout))
		defer rc.SetReadDeadline(time.Time{})
	}
	body, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, 64<<20))
	if err != nil {
		return &api.Error{Message: "malformed request body: " + err.Error(), Code: api.CodeBadRequest}
	}
	// JSON decoding would turn invalid UTF-8 into U+FFFD without a word:
	// a request carrying it is refused instead (hora's client never sends
	// it; docs/robustness.md).
	if !utf8.Valid(body) {
		n := 0
		for n < len(body) {
			r, size := utf8.DecodeRune(body[n:])
			if r == utf8.RuneError && size == 1 {
				break
			}
			n += size
		}
		return &api.Error{Message: fmt.Sprintf("malformed request body: invalid UTF-8 at byte %d", n), Code: api.CodeBadRequest}
	}
	// Every sbatch's request first tries the hand-written decoder, which
	// takes what it can read exactly as encoding/json would.
	if req, ok := v.(*api.SubmitRequest); ok && api.DecodeSubmitRequest(body, req) {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return &api.Error{Message: "malformed request body: " + err.Error(), Code: api.CodeBadRequest}
	}
	return nil
}

func (c *Controller) hSubmit(ctx context.Context, who *Caller, r *http.Request) (any, error) {
	var req api.SubmitRequest
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	if err := checkFieldSizes(&req.Spec); err != nil {
		return nil, err
	}
	// A submission read whole is carried out whether or not its client
	// still listens, as slurmctld does: net/http cancels the request's
	// context when the client half-closes or goes, and a commit cut there
	// answered "Unable to record the job: context canceled" to a client
	// that had only shut its sending side (found by the fault harness's
	// hostile client).
	resp, err := c.submit(context.WithoutCancel(ctx), who, req)
	if err == nil && !req.TestOnly {
		c.log.Info("submitted", "job", resp.JobID, "uid", who.UID, "partition", resp.Partition)
	}
	return resp, err
}

func (c *Controller) hCancel(ctx context.Context, who *Caller, r *http.Request) (any, error) {
	var req api.CancelRequest
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	if len(req.IDs) > 0 || len(req.Tasks) > 0 {
		req.IDs, req.Tasks = c.expandIDs(req.IDs, req.Tasks), nil
	}
	return c.cancel(ctx, who, req)
}

func (c *Controller) hHold(hold bool) handlerFunc {
	return func(ctx context.Context, who *Caller, r *http.Request) (any, error) {
		var req api.ControlRequest
		if err := decode(r, &req); err != nil {
			return nil, err
		}
		return c.holdAs(ctx, who, c.expandIDs(req.IDs, req.Tasks), hold, req.UserHold), nil
	}
}

func (c *Controller) hPing(ctx context.Context, who *Caller, r *http.Request) (any, error) {
	return &api.PingResponse{Version: Version, ClusterName: c.cfg.ClusterName, Now: c.now().Unix(),
		PBSFlavour: c.cfg.PBS.Flavour, PBSServer: c.pbsServer()}, nil
}

// hJobs lists jobs. Live jobs come from memory; with history=1 finished
// ones come from the store however old (sacct). Scripts and environments
// are sent only with full=1: squeue over 10,000 jobs must stay small.
func (c *Controller) hJobs(ctx context.Context, who *Caller, r *http.Request) (any, error) {
	q := r.URL.Query()
	var ids []int64
	for _, s := range q["id"] {
		id, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, &api.Error{Message: fmt.Sprintf("id: invalid job id %q", s), Code: api.CodeBadRequest}
		}
		ids = append(ids, id)
	}
	var uids []uint32
	for _, u := range q["user"] {
		uid, ok := lookupUID(u)
		if !ok {
			return nil, &api.Error{Message: "Invalid user: " + u, Code: api.CodeBadRequest}
		}
		uids = append(uids, uid)
	}
	var states []api.JobState
	for _, s := range q["state"] {
		st, ok := api.ParseState(s)
		if !ok {
			return nil, &api.Error{Message: "Invalid job state specified: " + s, Code: api.CodeBadRequest}
		}
		states = append(states, st)
	}
	parts, names := q["partition"], q["name"]
	all, full, history := q.Get("all") == "1", q.Get("full") == "1", q.Get("history") == "1"
	brief := q.Get("brief") == "1"
	// ids_only (qselect): the answer is the ids alone, optionally of the
	// jobs whose PBS state letter is in pbs_state.
	idsOnly, pbsStates, torque := q.Get("ids_only") == "1", q.Get("pbs_state"), q.Get("pbs_torque") == "1"
	if !api.ValidPBSStates(pbsStates) {
		return nil, &api.Error{Message: "pbs_state: invalid state letters " + strconv.Quote(pbsStates), Code: api.CodeBadRequest}
	}
	nowU := c.now().Unix()
	arrays, ok := c.newPBSArraySel(q.Get("pbs_arrays"), nowU)
	if !ok {
		return nil, &api.Error{Message: "pbs_arrays: invalid value " + strconv.Quote(q.Get("pbs_arrays")), Code: api.CodeBadRequest}
	}
	// show is one job of the answer: presented (pending reason, planned
	// start, owner-only fields), or only what selects it (qselect).
	show := func(j *api.Job) api.Job {
		if brief {
			return api.BriefJob(j)
		}
		return c.present(who, *j, full)
	}
	// add appends j shown, presented in place: a job is copied once, not
	// twice (squeue over 100,000 jobs).
	add := func(dst *[]api.Job, j *api.Job, live *job) {
		if brief {
			*dst = append(*dst, api.BriefJob(j))
			return
		}
		*dst = append(*dst, *j)
		c.presentIn(who, live, &(*dst)[len(*dst)-1], full)
	}
	keep := func(j *api.Job) bool {
		// An array's id names all its tasks, as in Slurm.
		if len(ids) > 0 && !slices.Contains(ids, j.ID) && (j.ArrayJobID == 0 || !slices.Contains(ids, j.ArrayJobID)) {
			return false
		}
		if len(uids) > 0 && !slices.Contains(uids, j.UID) {
			return false
		}
		if len(states) > 0 {
			if !slices.Contains(states, j.State) {
				return false
			}
		} else if !all && !history && j.State.Finished() && !arrays.Live(j) {
			return false
		}
		if len(parts) > 0 && !slices.Contains(parts, j.Spec.Partition) {
			return false
		}
		if len(names) > 0 && !slices.Contains(names, j.Spec.Name) {
			return false
		}
		if pbsStates != "" && !strings.Contains(pbsStates, arrays.State(j, torque, nowU)) {
			return false
		}
		return arrays.First(j)
	}
	if !history && !c.isRecovered() {
		return c.jobsDuringRecovery(ctx, who, r, ids, uids, keep, full, idsOnly)
	}
	if idsOnly && !history {
		out := &api.JobIDsResponse{IDs: []int64{}}
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, lj := range c.order {
			if j := &lj.Job; keep(j) {
				out.IDs = append(out.IDs, j.ID)
				out.AddTask(j)
			}
		}
		return out, nil
	}
	out := &api.JobsResponse{Jobs: []api.Job{}}
	if history {
		since, _ := strconv.ParseInt(q.Get("since"), 10, 64)
		f := store.Filter{IDs: ids, Since: since}
		if len(uids) > 0 {
			// Read only the users' jobs (jobs(uid, end_time)), not
			// everyone's over the period: sacct -u over a long history.
			f.UIDs = uids
		}
		stored, err := c.st.Jobs(ctx, f)
		if err != nil {
			return nil, err
		}
		c.mu.Lock()
		for i := range stored {
			j := &stored[i]
			if live := c.jobs[j.ID]; live != nil {
				*j = live.Job // memory is ahead of the store by at most in-flight starts
				c.showCompletingLocked(live, j)
			}
			if keep(j) {
				out.Jobs = append(out.Jobs, show(j))
			}
		}
		c.mu.Unlock()
		if idsOnly {
			ids := &api.JobIDsResponse{IDs: make([]int64, 0, len(out.Jobs))}
			for i := range out.Jobs {
				ids.IDs = append(ids.IDs, out.Jobs[i].ID)
				ids.AddTask(&out.Jobs[i])
			}
			return ids, nil
		}
		return out, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	// hora's own client gets the listing encoded here, job by job from
	// memory, rather than from a copy of every job made for the encoder:
	// that copy was 100 MB for 100,000 jobs, and most of horad's side of
	// squeue. rows are the answer's rows: a live job, presented as it is
	// encoded, or a row already made (an array's folded row, a COMPLETING
	// view) in out.Jobs.
	encode := r.Header.Get("Accept") == api.MediaListing && !brief
	var rows []listRow
	if encode {
		rows = make([]listRow, 0, len(c.order))
	} else {
		// Sized for every job at once: growing a slice of 10,000 jobs by
		// appends copied it a dozen times under the lock.
		out.Jobs = listings.get(len(c.order))
	}
	var folded arrayFolder
	if q.Get("fold") == "1" {
		folded = arrayFolder{}
	}
	for _, j := range c.order {
		view := &j.Job
		if j.State == api.StateRunning && c.completingLocked(j) {
			v := j.Job
			v.State = api.StateCompleting
			view = &v
		}
		if !keep(view) {
			continue
		}
		if folded != nil && j.ArrayJobID != 0 && j.State == api.StatePending {
			reason := j.Reason
			if reason != "JobHeldUser" && reason != "JobHeldAdmin" {
				reason = c.eng.Reason(schedID(j.ID))
			}
			if n := len(out.Jobs); folded.add(&out.Jobs, &j.Job, reason, show) && encode {
				rows = append(rows, listRow{made: n})
			}
			continue
		}
		switch {
		case !encode:
			add(&out.Jobs, view, j)
		case view == &j.Job:
			rows = append(rows, listRow{live: j})
		default:
			rows = append(rows, listRow{made: len(out.Jobs)})
			out.Jobs = append(out.Jobs, show(view))
		}
	}
	if encode {
		return c.encodeListingLocked(who, rows, out.Jobs, full), nil
	}
	return out, nil
}

// listRow is one row of a listing encoded under the lock: a live job, or
// the index of a row already made.
type listRow struct {
	live *job
	made int
}

// encodedListing is a job listing already in hora's own encoding
// (api.MediaListing), in parts sent one after the other, which handle sends
// as they are.
type encodedListing struct{ parts []*[]byte }

func (el *encodedListing) len() int {
	n := 0
	for _, bp := range el.parts {
		n += len(*bp)
	}
	return n
}

// bytes is the whole listing in one slice (tests and benchmarks).
func (el *encodedListing) bytes() []byte {
	var b []byte
	for _, bp := range el.parts {
		b = append(b, *bp...)
	}
	return b
}

// release parks the parts' buffers once they are sent.
func (el *encodedListing) release() {
	for _, bp := range el.parts {
		listings.putBuf(bp)
	}
}

// parallelEncodeRows is the listing size from which encodeListingLocked
// shares the rows among the processors (below it, starting goroutines
// costs more than it saves), and encodeParts the number of shares, 0 for
// GOMAXPROCS up to 8. Variables for the tests.
var (
	parallelEncodeRows = 8192
	encodeParts        = 0
)

// encodeListingLocked encodes the rows, each live job presented on a
// scratch copy. Caller holds c.mu, and horad's every other request waits
// for it: a large listing is encoded by up to GOMAXPROCS goroutines, each
// a contiguous share of the rows into a part of its own, while the client
// waits idle. What they read under the lock (the jobs, the Engine's
// reasons and planned starts, the dependencies) nobody writes while c.mu
// is held, and each writes only its own scratch job and buffer. 100,000
// jobs: 60 ms of the lock on one core before (docs/benchmarks.md).
func (c *Controller) encodeListingLocked(who *Caller, rows []listRow, made []api.Job, full bool) *encodedListing {
	k := 1
	if len(rows) >= parallelEncodeRows {
		k = min(runtime.GOMAXPROCS(0), 8)
		if encodeParts > 0 {
			k = encodeParts
		}
	}
	// parts[0] is the header with the part table, written last.
	parts := make([]*[]byte, k+1)
	table := make([]api.ListingPart, k)
	encode := func(p int) {
		lo, hi := p*len(rows)/k, (p+1)*len(rows)/k
		bp := listings.buf()
		b := (*bp)[:0]
		var scratch api.Job
		for _, row := range rows[lo:hi] {
			if row.live == nil {
				b = api.AppendListingJob(b, &made[row.made])
				continue
			}
			scratch = row.live.Job
			c.presentIn(who, row.live, &scratch, full)
			b = api.AppendListingJob(b, &scratch)
		}
		*bp = b
		parts[p+1], table[p] = bp, api.ListingPart{Jobs: hi - lo, Bytes: len(b)}
	}
	var wg sync.WaitGroup
	for p := 1; p < k; p++ {
		wg.Go(func() { encode(p) })
	}
	encode(0)
	wg.Wait()
	hp := listings.buf()
	*hp = api.AppendListingHeader((*hp)[:0], table)
	parts[0] = hp
	return &encodedListing{parts: parts}
}

// arrayFolder folds the pending tasks of an array that wait for the same
// reason into one row, as squeue shows them without -r: foldKey → the
// index of that row in the answer.
type arrayFolder map[foldKey]int

type foldKey struct {
	array  int64
	reason string
}

// add appends j's row, shown, or adds j's task to its array's row; true
// when it appended a row.
func (f arrayFolder) add(out *[]api.Job, j *api.Job, reason string, show func(*api.Job) api.Job) bool {
	k := foldKey{j.ArrayJobID, reason}
	if i, ok := f[k]; ok {
		(*out)[i].ArrayPending = append((*out)[i].ArrayPending, j.ArrayTaskID)
		return false
	}
	f[k] = len(*out)
	row := show(j)
	row.ArrayPending = []int64{j.ArrayTaskID}
	*out = append(*out, row)
	return true
}

// present fills in what is computed rather than stored (the pending reason)
// and strips the bulky fields unless asked for. A job's script and
// environment (which often hold tokens) go only to its owner and to
// operators, as Slurm shows them. The copy owns its Steps: the response is
// encoded after c.mu is released, while a chunk's end may write the job's
// own slice. Caller holds c.mu.
func (c *Controller) present(who *Caller, j api.Job, full bool) api.Job {
	c.presentIn(who, nil, &j, full)
	return j
}

// presentIn is present on a copy the caller owns of the job live, or of
// the job of that id when live is nil (one lookup fewer per job of a long
// listing, whose loop has the job already).
func (c *Controller) presentIn(who *Caller, live *job, j *api.Job, full bool) {
	if j.State == api.StatePending && j.Reason != "JobHeldUser" && j.Reason != "JobHeldAdmin" {
		if r := c.eng.Reason(schedID(j.ID)); r != "" {
			j.Reason = r
		}
	}
	if j.State == api.StateRunning {
		// A running divisible job whose deadline a node loss made
		// unguaranteed shows why (scheduler.RunningReasoner).
		if r := c.eng.Reason(schedID(j.ID)); r != "" && r != "None" {
			j.Reason = r
		}
	}
	if j.State == api.StatePending && c.eng.Plans(j.Spec.Partition) {
		if t, ok := c.eng.PlannedStart(schedID(j.ID)); ok {
			j.ExpectedStart = int64(t)
		}
	}
	c.presentStored(who, j, full)
	if j.State == api.StatePending {
		if live == nil {
			live = c.jobs[j.ID]
		}
		if live != nil {
			j.Dependency = c.dependencyText(live)
		}
	}
	if j.ArrayJobID != 0 {
		j.ArrayThrottle = c.arrayThrottle(j.ArrayJobID)
	}
	if len(j.Steps) > 0 {
		j.Steps = slices.Clone(j.Steps)
	}
}

func (c *Controller) hNodes(ctx context.Context, who *Caller, r *http.Request) (any, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	busy := map[string][]int64{}
	completing := map[string]bool{}
	lastEnd := maps.Clone(c.lastBusy)
	for _, j := range c.order {
		if j.State.Finished() && j.StartTime != 0 {
			for _, n := range j.Nodes {
				lastEnd[n] = max(lastEnd[n], j.EndTime)
			}
		}
		if j.State == api.StateRunning || j.State == api.StateSuspended {
			comp := c.completingLocked(j)
			for _, n := range j.Nodes {
				busy[n] = append(busy[n], j.ID)
				completing[n] = completing[n] || comp
			}
		}
	}
	out := &api.NodesResponse{}
	info := map[string]scheduler.NodeInfo{}
	for _, ni := range c.eng.Nodes() {
		info[ni.Name] = ni
	}
	specs := map[string]scheduler.NodeSpec{}
	for _, s := range c.cfg.Scheduler().Nodes {
		specs[s.Name] = s
	}
	freeMem, load := c.probeLoad()
	sysr, _ := c.exec.(nodes.SystemReader)
	now := c.now().Unix()
	for _, n := range c.nodes {
		var parts []string
		for _, p := range c.cfg.Scheduler().Partitions {
			if slices.Contains(p.Nodes, n.Name) {
				parts = append(parts, p.Name)
			}
		}
		an := api.Node{Name: n.Name, Address: n.Address, CPUs: n.CPUs,
			MemoryMB: n.MemoryMB, Rate: n.Rate, Partitions: parts, Jobs: busy[n.Name]}
		resourceView(&an, specs[n.Name], info[n.Name], freeMem, load)
		an.StartTime, an.LastBusy = c.started.Unix(), max(c.started.Unix(), lastEnd[n.Name])
		if len(busy[n.Name]) > 0 {
			an.LastBusy = now
		}
		if sysr != nil {
			if sys, ok := sysr.NodeSystem(n.Name); ok {
				an.OS = sys.OS
				if !sys.Boot.IsZero() {
					an.BootTime = sys.Boot.Unix()
				}
			}
		}
		c.nodeView(&an, len(busy[n.Name]) > 0)
		switch {
		case an.State == "allocated" && completing[n.Name]:
			an.State = "completing" // sinfo comp, as Slurm while a job's processes are killed
		case an.State == "allocated" && info[n.Name].Mixed:
			an.State = "mixed"
		}
		c.resvNodeView(&an, now)
		out.Nodes = append(out.Nodes, an)
	}
	return out, nil
}

func (c *Controller) hPartitions(ctx context.Context, who *Caller, r *http.Request) (any, error) {
	out := &api.PartitionsResponse{}
	for _, p := range c.cfg.Scheduler().Partitions {
		out.Partitions = append(out.Partitions, api.Partition{Name: p.Name, Default: p.Default, State: "up",
			Policy: p.Policy, Nodes: p.Nodes, MaxTime: limitSeconds(p.MaxTime), DefaultTime: limitSeconds(p.DefaultTime),
			DefMemPerCPU: p.DefMemPerCPU, MaxMemPerNode: p.MaxMemPerNode, OverSubscribe: overSubscribeText(p.OverSubscribe)})
	}
	return out, nil
}

// listings recycles the buffers of job listings: squeue over 10,000 jobs
// allocated 6 MB of jobs and 3 MB of encoding per call, and horad spent a
// fifth of its time collecting them.
var listings listingPool

type listingPool struct{ jobs, bufs sync.Pool }

func (p *listingPool) get(n int) []api.Job {
	if s, ok := p.jobs.Get().(*[]api.Job); ok && cap(*s) >= n {
		return (*s)[:0]
	}
	return make([]api.Job, 0, n)
}

func (p *listingPool) put(s []api.Job) {
	if cap(s) < 256 {
		return // small listings are cheap; keep the pool for large ones
	}
	// Drop what the jobs point to before parking; beyond len a pooled
	// slice is still zero from its previous put.
	clear(s)
	s = s[:0]
	p.jobs.Put(&s)
}

func (p *listingPool) buf() *[]byte {
	if b, ok := p.bufs.Get().(*[]byte); ok {
		return b
	}
	b := make([]byte, 0, 64<<10)
	return &b
}

func (p *listingPool) putBuf(b *[]byte) { p.bufs.Put(b) }

func limitSeconds(f float64) int64 {
	if f > 1e15 {
		return api.NoLimit
	}
	return int64(f)
}

// completingLocked says whether a running job's processes are being killed:
// cancelled or asked to requeue (TERM sent, KILL after KillWait), or past its
// time limit (the shepherd is stopping it). Slurm shows such a job
// COMPLETING (CG) until its processes are gone; so does hora, in every
// listing, without storing it (the end that follows is what is recorded).
func (c *Controller) completingLocked(j *job) bool {
	if j.State != api.StateRunning || !j.launched {
		return false
	}
	if j.cancelRequested || j.requeueRequested {
		return true
	}
	if j.Spec.TimeLimit > 0 && j.Spec.Load == 0 && j.StartTime > 0 {
		return c.now().Unix() >= j.StartTime+j.SuspendedSecs+j.Spec.TimeLimit
	}
	return false
}

func (c *Controller) showCompletingLocked(live *job, j *api.Job) {
	if c.completingLocked(live) {
		j.State = api.StateCompleting
	}
}

// withBody is c.handle for a request with a JSON body: it decodes the body
// into a Req (refusing a malformed one as decode does) and hands it to h.
func withBody[Req any](c *Controller, h func(ctx context.Context, who *Caller, req Req) (any, error)) http.HandlerFunc {
	return c.handle(func(ctx context.Context, who *Caller, r *http.Request) (any, error) {
		var req Req
		if err := decode(r, &req); err != nil {
			return nil, err
		}
		return h(ctx, who, req)
	})
}
