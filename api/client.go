package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"
)

// DefaultSocketPaths are tried in order when $HORA_SOCKET is not set: the
// packaged daemon's path first, then the embedded default under the working
// directory (make demo).
var DefaultSocketPaths = []string{"/run/hora/horad.sock", "./var/horad.sock"}

// MediaGob is the media type of gob-encoded listings, which clients before
// MediaListing asked for; horad still serves it to them.
const MediaGob = "application/x-gob"

// DefaultMessageTimeout bounds every request of a client, as Slurm's
// MessageTimeout (10 s by default) bounds its commands' exchanges with
// slurmctld: a stopped or wedged horad makes a command fail with Slurm's
// text instead of hanging. $HORA_MESSAGE_TIMEOUT (seconds) overrides it.
const DefaultMessageTimeout = 10 * time.Second

// Client talks to horad over its Unix socket.
type Client struct {
	Socket string
	// Timeout bounds each request whose context has no deadline of its
	// own; 0 means no bound (a caller that waits on purpose passes a
	// context with its own deadline or cancellation).
	Timeout time.Duration
	// OnRateLimited, if set, is told of each refusal by horad's rate limit
	// before the client sleeps and retries (n counts them).
	OnRateLimited func(n int)
	t             *transport
}

// MessageTimeout is the per-request bound from $HORA_MESSAGE_TIMEOUT
// (seconds, > 0), else DefaultMessageTimeout. A malformed value is an error
// naming the variable, so a typo does not silently mean "wait for ever".
func MessageTimeout() (time.Duration, error) {
	v := os.Getenv("HORA_MESSAGE_TIMEOUT")
	if v == "" {
		return DefaultMessageTimeout, nil
	}
	secs, err := strconv.ParseFloat(v, 64)
	if err != nil || secs <= 0 || secs > 1e6 {
		return 0, fmt.Errorf("HORA_MESSAGE_TIMEOUT=%q: want a number of seconds greater than 0", v)
	}
	return time.Duration(secs * float64(time.Second)), nil
}

// ErrNoDaemon means no socket answered; the message lists what was tried.
type ErrNoDaemon struct{ Tried []string }

func (e *ErrNoDaemon) Error() string {
	return "cannot reach horad: tried " + strings.Join(e.Tried, ", ") +
		" (start horad, or set HORA_SOCKET to its socket)"
}

// Dial finds the daemon: $HORA_SOCKET if set (and only it), else the default
// paths in order. It returns *ErrNoDaemon naming every path tried.
//
// As Slurm's commands try to connect to slurmctld once a second for
// MessageTimeout seconds before giving up, a socket that is not there or
// refuses (horad restarting, its listen backlog full, an SSH node's
// callback socket being forwarded again after a reconnect) is tried again
// once a second while the message timeout lasts: a command issued during
// `systemctl restart horad` waits for it instead of failing. A timeout of
// a second or less tries once.
func Dial() (*Client, error) {
	timeout, err := MessageTimeout()
	if err != nil {
		return nil, err
	}
	paths := DefaultSocketPaths
	if s := os.Getenv("HORA_SOCKET"); s != "" {
		paths = []string{s}
	}
	for waited := time.Duration(0); ; waited += dialRetryPause {
		var tried []string
		again := true
		for _, p := range paths {
			c, err := dialUnix(p)
			if err != nil {
				tried = append(tried, fmt.Sprintf("%s (%s)", p, err))
				again = again && retryableDial(err)
				continue
			}
			cl := newClient(p, c)
			cl.Timeout = timeout
			return cl, nil
		}
		if !again || waited+dialRetryPause >= timeout {
			return nil, &ErrNoDaemon{Tried: tried}
		}
		time.Sleep(dialRetryPause)
	}
}

// dialRetryPause is the pause between Dial's attempts (Slurm's: a second).
var dialRetryPause = time.Second

// retryableDial says whether a failed connect may succeed a moment later:
// nothing listens yet (ENOENT, ECONNREFUSED) or the backlog is full
// (EAGAIN). A socket the caller may not open (EACCES) will not change.
func retryableDial(err error) bool {
	return errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EAGAIN)
}

// NewClient returns a client for the socket at path.
func NewClient(path string) *Client { return newClient(path, nil) }

func newClient(path string, first conn) *Client {
	t := &transport{socket: path}
	if first != nil {
		// The probe connection serves the first request: a CLI command
		// makes one or two requests, and a second connect is a measurable
		// share of its run time.
		t.idle = &tconn{c: first, br: newConnReader(first)}
	}
	return &Client{Socket: path, t: t}
}

// do sends one request. A refusal by the rate limit (CodeRateLimited: horad
// did nothing) is slept off and the request sent again, 1 s, 2 s, ... up to
// 10 s apart, as Slurm's commands do on SLURMCTLD_COMMUNICATIONS_BACKOFF;
// each attempt has its own message timeout, and the caller's context ends
// the retrying.
func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	for n := 1; ; n++ {
		err := c.doOnce(ctx, method, path, in, out)
		var ae *Error
		if err == nil || !errors.As(err, &ae) || ae.Code != CodeRateLimited {
			return err
		}
		if c.OnRateLimited != nil {
			c.OnRateLimited(n)
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Duration(min(n, 10)) * rateLimitPause):
		}
	}
}

// rateLimitPause is the unit of the sleeps after a rate-limit refusal.
var rateLimitPause = time.Second

func (c *Client) doOnce(ctx context.Context, method, path string, in, out any) error {
	if _, has := ctx.Deadline(); !has && c.Timeout > 0 {
		// The bound covers the whole exchange, answer body included: a
		// daemon stopped half-way through a listing is as hung as one that
		// never answered.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, c.Timeout, errMessageTimeout)
		defer cancel()
	}
	err := c.exchange(ctx, method, path, in, out)
	if err != nil && errors.Is(context.Cause(ctx), errMessageTimeout) {
		return &Error{Message: MsgSocketTimeout, Code: CodeTimeout}
	}
	return err
}

// errMessageTimeout marks a context ended by the client's own message
// timeout, as opposed to a caller's cancellation or deadline.
var errMessageTimeout = errors.New("message timeout")

func (c *Client) exchange(ctx context.Context, method, path string, in, out any) error {
	var body []byte
	var hdr [][2]string
	if in != nil {
		var b []byte
		var err error
		if r, ok := in.(SubmitRequest); ok {
			b, err = appendSubmitJSON(make([]byte, 0, 512+len(r.Spec.Script)), &r)
		} else if r, ok := in.(CancelRequest); ok {
			b = appendCancelJSON(make([]byte, 0, 128), &r)
		} else {
			b, err = json.Marshal(in)
		}
		if err != nil {
			return err
		}
		body = b
		hdr = append(hdr, [2]string{"Content-Type", "application/json"})
	}
	if _, ok := out.(*JobsResponse); ok || isRaw(out) {
		// Listings of thousands of jobs decode many times faster in hora's
		// own encoding (listing.go) than as JSON; the daemon answers JSON to
		// anyone who does not ask (curl), and so does an older daemon.
		hdr = append(hdr, [2]string{"Accept", MediaListing})
	}
	resp, err := c.t.roundTrip(ctx, method, path, hdr, body)
	if err != nil {
		return fmt.Errorf("horad at %s: %w", c.Socket, err)
	}
	defer resp.body.Close()
	if resp.status/100 != 2 {
		return errorAnswer(resp)
	}
	if out == nil {
		return nil
	}
	jr, isJobs := out.(*JobsResponse)
	raw, isRaw := out.(*rawListing)
	switch {
	case isJobs && resp.contentType == MediaListing:
		var b []byte
		if b, err = readBody(resp); err == nil {
			jr.Jobs, err = ParseListing(b)
		}
	case isRaw && resp.contentType == MediaListing:
		raw.b, err = readBody(resp)
	case isRaw:
		// A daemon that answers JSON (one before the listing codec).
		var jr JobsResponse
		if err = json.NewDecoder(resp.body).Decode(&jr); err == nil {
			raw.b = AppendListing(nil, jr.Jobs)
		}
	case isHotAnswer(out):
		var b []byte
		if b, err = readBody(resp); err == nil && !decodeAnswer(b, out, false) {
			err = json.NewDecoder(bytes.NewReader(b)).Decode(out)
		}
	default:
		err = json.NewDecoder(resp.body).Decode(out)
	}
	if err != nil {
		return fmt.Errorf("horad at %s: decoding the answer to %s %s: %w", c.Socket, method, path, err)
	}
	return nil
}

// errorAnswer is the *Error of a refused request: the daemon's own, or
// one made of the status line and body of something else that answered.
func errorAnswer(resp *response) *Error {
	e := &Error{}
	b, _ := io.ReadAll(io.LimitReader(resp.body, 1<<20))
	if !decodeAnswer(b, e, true) && json.Unmarshal(b, e) != nil || e.Message == "" {
		e.Message = fmt.Sprintf("horad: %s: %s", resp.statusText, strings.TrimSpace(string(b)))
		e.Code = CodeInternal
	}
	return e
}

// isHotAnswer tells the answers decodeAnswer reads without encoding/json.
func isHotAnswer(out any) bool {
	switch out.(type) {
	case *SubmitResponse, *CancelResponse:
		return true
	}
	return false
}

// readBody reads a whole body, in one allocation when its length is known.
func readBody(resp *response) ([]byte, error) {
	if resp.length < 0 || resp.length > 1<<30 {
		return io.ReadAll(resp.body)
	}
	b := make([]byte, resp.length)
	_, err := io.ReadFull(resp.body, b)
	if err == nil {
		// Read the end too (the body's reader answers it without touching
		// the connection), so that closing the body hands the connection
		// back without draining it through io.Discard's 8 KB buffer.
		_, err = resp.body.Read(nil)
		if err == io.EOF {
			err = nil
		}
	}
	return b, err
}

// Submit queues a job.
func (c *Client) Submit(ctx context.Context, r SubmitRequest) (*SubmitResponse, error) {
	if err := CheckUTF8(&r.Spec); err != nil {
		return nil, err
	}
	out := &SubmitResponse{}
	return out, c.do(ctx, "POST", PathSubmit, r, out)
}

// CheckUTF8 refuses a spec whose name, words or paths are not UTF-8: the
// JSON that carries them would change each invalid byte into U+FFFD, and
// a job named or writing to something else than asked is worse than a
// clear refusal (docs/robustness.md).
func CheckUTF8(s *JobSpec) error {
	for _, f := range []struct{ what, v string }{
		{"job name", s.Name}, {"account", s.Account}, {"comment", s.Comment}, {"partition", s.Partition},
		{"work dir", s.WorkDir}, {"output", s.Stdout}, {"error", s.Stderr}, {"input", s.Stdin},
		{"reservation", s.Reservation}, {"qos", s.QOS},
	} {
		if !utf8.ValidString(f.v) {
			return &Error{Message: fmt.Sprintf("Invalid %s %q: not UTF-8 text", f.what, f.v), Code: CodeBadRequest}
		}
	}
	return nil
}

// JobFilter selects jobs server-side; empty fields select everything.
type JobFilter struct {
	IDs        []int64
	Users      []string // names or numeric uids
	States     []JobState
	Partitions []string
	Names      []string
	// All includes finished jobs still remembered (squeue -t all, sacct).
	All bool
	// Full includes the script and environment of each job (scontrol show job).
	Full bool
	// History reads finished jobs from the durable record however old they
	// are (sacct); without it finished jobs are shown only for MinJobAge
	// seconds after they end (squeue -t all), as slurmctld does.
	History bool
	// Since limits History to jobs submitted or ended at or after this Unix time.
	Since int64
	// Fold gives the pending tasks of a job array with the same reason as
	// one job, the one of the lowest task, with ArrayPending listing them
	// all (squeue without -r: 7_[3-15%4]).
	Fold bool
	// Brief asks for the fields that select jobs only (BriefJob): qselect
	// over 100,000 jobs needs their ids, not their paths and commands.
	Brief bool
}

// Query encodes the filter as URL query parameters.
func (f JobFilter) Query() Values {
	q := Values{}
	for _, id := range f.IDs {
		q.Add("id", fmt.Sprint(id))
	}
	for _, u := range f.Users {
		q.Add("user", u)
	}
	for _, s := range f.States {
		q.Add("state", string(s))
	}
	for _, p := range f.Partitions {
		q.Add("partition", p)
	}
	for _, n := range f.Names {
		q.Add("name", n)
	}
	if f.All {
		q.Set("all", "1")
	}
	if f.Full {
		q.Set("full", "1")
	}
	if f.History {
		q.Set("history", "1")
	}
	if f.Since != 0 {
		q.Set("since", fmt.Sprint(f.Since))
	}
	if f.Fold {
		q.Set("fold", "1")
	}
	if f.Brief {
		q.Set("brief", "1")
	}
	return q
}

// Jobs lists jobs matching the filter, ordered by id.
func (c *Client) Jobs(ctx context.Context, f JobFilter) ([]Job, error) {
	out := &JobsResponse{}
	path := PathJobs
	if q := f.Query().Encode(); q != "" {
		path += "?" + q
	}
	return out.Jobs, c.do(ctx, "GET", path, nil, out)
}

// JobListing is Jobs for a caller that walks the listing itself, one job
// at a time (squeue over 100,000 jobs, ListingReader).
func (c *Client) JobListing(ctx context.Context, f JobFilter) (*ListingReader, error) {
	out := &rawListing{}
	path := PathJobs
	if q := f.Query().Encode(); q != "" {
		path += "?" + q
	}
	if err := c.do(ctx, "GET", path, nil, out); err != nil {
		return nil, err
	}
	r, err := NewListingReader(out.b)
	if err != nil {
		return nil, fmt.Errorf("horad at %s: %w", c.Socket, err)
	}
	return r, nil
}

// rawListing receives a listing's bytes undecoded.
type rawListing struct{ b []byte }

func isRaw(out any) bool { _, ok := out.(*rawListing); return ok }

// Cancel cancels or signals jobs.
func (c *Client) Cancel(ctx context.Context, r CancelRequest) (*CancelResponse, error) {
	out := &CancelResponse{}
	return out, c.do(ctx, "POST", PathCancel, r, out)
}

// Hold puts pending jobs on user hold.
func (c *Client) Hold(ctx context.Context, ids []int64) (*CancelResponse, error) {
	out := &CancelResponse{}
	return out, c.do(ctx, "POST", PathHold, ControlRequest{IDs: ids}, out)
}

// Control posts a ControlRequest (hold, release, suspend, resume, requeue,
// with array task selectors) to path.
func (c *Client) Control(ctx context.Context, path string, req ControlRequest) (*CancelResponse, error) {
	out := &CancelResponse{}
	return out, c.do(ctx, "POST", path, req, out)
}

// Config reads horad's configuration (scontrol show config).
func (c *Client) Config(ctx context.Context) (*ConfigResponse, error) {
	out := &ConfigResponse{}
	return out, c.do(ctx, "GET", PathConfig, nil, out)
}

// Update changes jobs (scontrol update JobId=…).
func (c *Client) Update(ctx context.Context, r JobUpdateRequest) (*CancelResponse, error) {
	out := &CancelResponse{}
	return out, c.do(ctx, "POST", PathUpdate, r, out)
}

// Release clears holds.
func (c *Client) Release(ctx context.Context, ids []int64) (*CancelResponse, error) {
	out := &CancelResponse{}
	return out, c.do(ctx, "POST", PathRelease, ControlRequest{IDs: ids}, out)
}

// Nodes lists nodes.
func (c *Client) Nodes(ctx context.Context) ([]Node, error) {
	out := &NodesResponse{}
	return out.Nodes, c.do(ctx, "GET", PathNodes, nil, out)
}

// Partitions lists partitions.
func (c *Client) Partitions(ctx context.Context) ([]Partition, error) {
	out := &PartitionsResponse{}
	return out.Partitions, c.do(ctx, "GET", PathPartitions, nil, out)
}

// Ping identifies the daemon.
// Stats asks horad for its numbers.
func (c *Client) Stats(ctx context.Context) (*StatsResponse, error) {
	out := &StatsResponse{}
	return out, c.do(ctx, "GET", PathStats, nil, out)
}

// Backup streams a consistent copy of horad's database (SQLite VACUUM INTO,
// taken while horad runs) into w. Root and operators only.
func (c *Client) Backup(ctx context.Context, w io.Writer) (int64, error) {
	resp, err := c.t.roundTrip(ctx, "GET", PathBackup, nil, nil)
	if err != nil {
		return 0, fmt.Errorf("horad at %s: %w", c.Socket, err)
	}
	defer resp.body.Close()
	if resp.status/100 != 2 {
		e := &Error{}
		b, _ := io.ReadAll(io.LimitReader(resp.body, 1<<20))
		if json.Unmarshal(b, e) != nil || e.Message == "" {
			e.Message = fmt.Sprintf("horad: %s: %s", resp.statusText, strings.TrimSpace(string(b)))
			e.Code = CodeInternal
		}
		return 0, e
	}
	n, err := io.Copy(w, resp.body)
	if err == nil && resp.length >= 0 && n != resp.length {
		err = fmt.Errorf("horad at %s: backup cut short: %d of %d bytes", c.Socket, n, resp.length)
	}
	return n, err
}

func (c *Client) Ping(ctx context.Context) (*PingResponse, error) {
	out := &PingResponse{}
	return out, c.do(ctx, "GET", PathPing, nil, out)
}

// Reservations lists the reservations, or the one named.
func (c *Client) Reservations(ctx context.Context, name string) (*ReservationsResponse, error) {
	out := &ReservationsResponse{}
	path := PathReservations
	if name != "" {
		path += "?" + Values{"name": {name}}.Encode()
	}
	return out, c.do(ctx, "GET", path, nil, out)
}

// CreateReservation books a reservation.
func (c *Client) CreateReservation(ctx context.Context, r ReservationRequest) (*ReservationResponse, error) {
	out := &ReservationResponse{}
	return out, c.do(ctx, "POST", PathReservationCreate, r, out)
}

// UpdateReservation changes a reservation.
func (c *Client) UpdateReservation(ctx context.Context, r ReservationRequest) (*ReservationResponse, error) {
	out := &ReservationResponse{}
	return out, c.do(ctx, "POST", PathReservationUpdate, r, out)
}

// Reconfigure makes horad re-read its configuration file (scontrol
// reconfigure); a file with errors is refused, and the running
// configuration stays.
func (c *Client) Reconfigure(ctx context.Context) (*ReconfigureResponse, error) {
	out := &ReconfigureResponse{}
	return out, c.do(ctx, "POST", PathReconfigure, nil, out)
}

// DeleteReservation removes a reservation.
func (c *Client) DeleteReservation(ctx context.Context, name string) error {
	return c.do(ctx, "POST", PathReservationDelete, ReservationRequest{Name: name}, &ReservationResponse{})
}

// Free is the range search over a partition ("" = the first reserve one).
func (c *Client) Free(ctx context.Context, partition string, from, to int64) (*FreeResponse, error) {
	out := &FreeResponse{}
	q := Values{"from": {strconv.FormatInt(from, 10)}, "to": {strconv.FormatInt(to, 10)}}
	if partition != "" {
		q.Set("partition", partition)
	}
	return out, c.do(ctx, "GET", PathFree+"?"+q.Encode(), nil, out)
}

// CreateStep asks for a job step inside an allocation.
func (c *Client) CreateStep(ctx context.Context, r StepRequest) (*StepGrant, error) {
	out := &StepGrant{}
	return out, c.do(ctx, "POST", PathStepCreate, r, out)
}

// StepStarted reports the process group of a step's tasks.
func (c *Client) StepStarted(ctx context.Context, r StepStarted) error {
	return c.do(ctx, "POST", PathStepStarted, r, &StepEndResponse{})
}

// EndStep reports how a step ended and returns its recorded state.
func (c *Client) EndStep(ctx context.Context, r StepEnd) (*StepEndResponse, error) {
	out := &StepEndResponse{}
	return out, c.do(ctx, "POST", PathStepEnd, r, out)
}

// StepInput sends a piece of a remote task's stdin.
func (c *Client) StepInput(ctx context.Context, r StepInput) error {
	return c.do(ctx, "POST", PathStepInput, r, &StepEndResponse{})
}

// SignalStep forwards a signal to the tasks of a remote step.
func (c *Client) SignalStep(ctx context.Context, r StepSignal) error {
	return c.do(ctx, "POST", PathStepSignal, r, &StepEndResponse{})
}

// AllocDone releases an interactive allocation.
func (c *Client) AllocDone(ctx context.Context, r AllocDone) error {
	return c.do(ctx, "POST", PathAllocDone, r, &CancelResponse{})
}

// AllocEnv returns the SLURM_* environment of a running job of the caller.
func (c *Client) AllocEnv(ctx context.Context, id int64) (*AllocEnv, error) {
	out := &AllocEnv{}
	return out, c.do(ctx, "GET", PathAllocEnv+"?id="+strconv.FormatInt(id, 10), nil, out)
}

// RunStep asks horad to run a remote step's tasks and calls frame for each
// StepFrame as it arrives, until the stream ends. Cancelling ctx closes
// the stream, which makes horad kill the tasks. The client's message
// timeout does not apply: the stream lasts as long as the tasks.
func (c *Client) RunStep(ctx context.Context, r StepRun, frame func(StepFrame)) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	resp, err := c.t.roundTrip(ctx, "POST", PathStepRun, [][2]string{{"Content-Type", "application/json"}}, b)
	if err != nil {
		return fmt.Errorf("horad at %s: %w", c.Socket, err)
	}
	defer resp.body.Close()
	if resp.status/100 != 2 {
		return errorAnswer(resp)
	}
	dec := json.NewDecoder(resp.body)
	for {
		var f StepFrame
		if err := dec.Decode(&f); err != nil {
			if err == io.EOF {
				return nil
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("horad at %s: reading the step's output: %w", c.Socket, err)
		}
		frame(f)
	}
}
