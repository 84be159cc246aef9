package api

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"unsafe"
)

// MediaListing is the media type of hora's own binary job listing, which
// the Go client asks for on /v1/jobs. squeue over 10,000 jobs spent half its
// time decoding gob (reflection, one allocation per string) and horad a
// fifth of its own encoding it; this codec is written out field by field
// and, on decode, shares a string with the previous job's value of the
// same field when they are equal (user, partition, state, reason).
// Everyone else still gets JSON, and gob stays available to older clients.
const MediaListing = "application/x-hora-listing"

// listingMagic starts every listing; the character after "HJL" is the
// format's version. A change of api.Job's fields changes the format, and
// with it the version. Version A added the part table.
const listingMagic = "HJLA"

// A listing is the magic, the number of jobs, and a table of parts (each
// part's number of jobs and length in bytes), then the jobs one after the
// other. horad encodes a large listing in parts, one per processor
// (controller.encodeListingLocked); the table lets a client decode the
// parts on as many processors without reading the varints before them
// (squeue over 100,000 jobs). A sequential reader ignores the parts.

// ListingPart is one part of a listing: its number of jobs and its length
// in bytes.
type ListingPart struct{ Jobs, Bytes int }

// AppendListing appends the binary encoding of jobs to b, in one part.
func AppendListing(b []byte, jobs []Job) []byte {
	var body []byte
	for i := range jobs {
		body = AppendListingJob(body, &jobs[i])
	}
	b = AppendListingHeader(b, []ListingPart{{Jobs: len(jobs), Bytes: len(body)}})
	return append(b, body...)
}

// AppendListingHeader starts a listing made of parts, each then written
// by as many calls of AppendListingJob as it has jobs.
func AppendListingHeader(b []byte, parts []ListingPart) []byte {
	n := 0
	for _, p := range parts {
		n += p.Jobs
	}
	b = append(b, listingMagic...)
	b = binary.AppendUvarint(b, uint64(n))
	b = binary.AppendUvarint(b, uint64(len(parts)))
	for _, p := range parts {
		b = binary.AppendUvarint(b, uint64(p.Jobs))
		b = binary.AppendUvarint(b, uint64(p.Bytes))
	}
	return b
}

// AppendListingJob appends one job of a listing.
func AppendListingJob(b []byte, j *Job) []byte {
	b = binary.AppendVarint(b, j.ID)
	s := &j.Spec
	b = appendStr(b, s.Name)
	b = appendStr(b, s.Script)
	b = appendStr(b, s.Command)
	b = appendStrs(b, s.Args)
	b = appendStr(b, s.WorkDir)
	b = appendStr(b, s.Stdout)
	b = appendStr(b, s.Stderr)
	b = appendStr(b, s.Stdin)
	b = appendStrs(b, s.Env)
	b = appendStr(b, s.Export)
	b = appendStr(b, s.Partition)
	for _, v := range [...]int64{int64(s.Nodes), int64(s.NodesMax), int64(s.NTasks), int64(s.CPUsPerTask),
		s.MemMB, s.TimeLimit, s.TimeMin, s.Begin, s.Deadline} {
		b = binary.AppendVarint(b, v)
	}
	b = appendBool(b, s.Hold)
	b = appendBool(b, s.Requeue)
	b = appendBool(b, s.NoRequeue)
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(s.Load))
	for _, v := range [...]string{s.Input, s.Reservation, s.Account, s.QOS, s.Comment, s.SubmitHost} {
		b = appendStr(b, v)
	}
	b = appendBool(b, s.OpenAppend)
	b = appendStr(b, s.MailType)
	b = appendStr(b, s.MailUser)
	b = appendBool(b, s.Alloc)
	for _, v := range [...]string{s.Array, s.Dependency, s.KillOnInvalidDep} {
		b = appendStr(b, v)
	}
	b = binary.AppendVarint(b, int64(s.Nice))
	b = appendStr(b, s.Signal)
	for _, v := range [...]int64{int64(s.NTasksPerNode), s.MemPerCPU, s.MemPerGPU, int64(s.CPUsPerGPU), int64(s.MinCPUs)} {
		b = binary.AppendVarint(b, v)
	}
	for _, v := range [...]string{s.Gres, s.GPUs, s.GPUsPerNode, s.GPUsPerTask, s.Exclusive, s.NodeList, s.Exclude, s.Constraint} {
		b = appendStr(b, v)
	}
	b = appendBool(b, s.MemAll)
	b = appendBool(b, s.Oversubscribe)
	b = appendBool(b, s.NoMultithread)
	b = appendBool(b, s.PBS != nil)
	if s.PBS != nil {
		b = appendStr(b, s.PBS.Server)
		b = appendStr(b, s.PBS.Flavour)
		b = appendStr(b, s.PBS.Queue)
		b = binary.AppendVarint(b, int64(s.PBS.PPN))
		b = appendStr(b, s.PBS.Shell)
	}
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(s.RTFrame))
	b = binary.AppendVarint(b, int64(s.RTBuffer))
	b = binary.AppendUvarint(b, uint64(len(s.RTWork)))
	for _, w := range s.RTWork {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(w))
	}
	b = binary.AppendVarint(b, int64(s.RTMisses))

	b = binary.AppendUvarint(b, uint64(j.UID))
	b = binary.AppendUvarint(b, uint64(j.GID))
	for _, v := range [...]string{j.User, j.Group, string(j.State), j.Reason} {
		b = appendStr(b, v)
	}
	for _, v := range [...]int64{j.Priority, j.SubmitTime, j.EligibleTime, j.StartTime, j.ExpectedStart,
		j.EndTime, j.SuspendTime, j.SuspendedSecs} {
		b = binary.AppendVarint(b, v)
	}
	b = appendStrs(b, j.Nodes)
	for _, v := range [...]int64{int64(j.ExitCode), int64(j.Signal), j.CancelledBy, int64(j.Restarts)} {
		b = binary.AppendVarint(b, v)
	}
	b = binary.AppendUvarint(b, uint64(len(j.Steps)))
	for i := range j.Steps {
		st := &j.Steps[i]
		b = binary.AppendVarint(b, int64(st.Index))
		b = appendStr(b, st.Node)
		b = appendStr(b, st.Name)
		b = binary.AppendVarint(b, int64(st.NTasks))
		b = binary.AppendVarint(b, int64(st.CPUs))
		b = appendStr(b, string(st.State))
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(st.Offset))
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(st.Size))
		for _, v := range [...]int64{st.StartTime, st.EndTime, int64(st.ExitCode), int64(st.Signal), st.TimeLimit} {
			b = binary.AppendVarint(b, v)
		}
	}
	b = appendStr(b, j.StdoutPath)
	b = appendStr(b, j.StderrPath)
	for _, v := range [...]int64{j.ArrayJobID, j.ArrayTaskID, int64(j.ArrayThrottle)} {
		b = binary.AppendVarint(b, v)
	}
	b = binary.AppendUvarint(b, uint64(len(j.ArrayPending)))
	for _, v := range j.ArrayPending {
		b = binary.AppendVarint(b, v)
	}
	b = appendStr(b, j.Dependency)
	b = binary.AppendVarint(b, j.MaxRSSKB)
	b = binary.AppendVarint(b, j.TotalCPUMs)
	b = binary.AppendUvarint(b, uint64(len(j.Alloc)))
	for i := range j.Alloc {
		a := &j.Alloc[i]
		b = appendStr(b, a.Node)
		b = appendInts(b, a.CPUs)
		b = binary.AppendVarint(b, a.MemMB)
		b = binary.AppendVarint(b, int64(a.Tasks))
		b = appendStr(b, a.Gres)
		b = appendInts(b, a.GPUs)
	}
	return b
}

func appendInts(b []byte, v []int) []byte {
	b = binary.AppendUvarint(b, uint64(len(v)))
	for _, x := range v {
		b = binary.AppendVarint(b, int64(x))
	}
	return b
}

func appendStr(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendStrs(b []byte, ss []string) []byte {
	b = binary.AppendUvarint(b, uint64(len(ss)))
	for _, s := range ss {
		b = appendStr(b, s)
	}
	return b
}

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

// ParseListing decodes what AppendListing encoded. A truncated or malformed
// listing is an error naming the job and the byte offset where it broke.
// The jobs' strings share data's bytes (no copy): data must not change
// afterwards.
func ParseListing(data []byte) ([]Job, error) {
	r, err := NewListingReader(data)
	if err != nil {
		return nil, err
	}
	var jobs []Job
	if r.Len() > 0 {
		jobs = make([]Job, r.Len())
	}
	for i := range jobs {
		if _, err := r.Next(&jobs[i]); err != nil {
			return nil, err
		}
	}
	if err := r.End(); err != nil {
		return nil, err
	}
	return jobs, nil
}

// ListingReader reads a listing one job at a time into a Job the caller
// reuses, and goes back to a job by the offset Next gave. squeue over
// 100,000 jobs decodes each job twice into one Job that stays in the cache
// (to filter and sort, then to print) instead of allocating 100 MB of
// Jobs, which cost more than the decoding itself. The jobs' strings share
// the listing's bytes, which must not change while they are used.
type ListingReader struct {
	d     listingDecoder
	n, i  int
	base  int           // where d.b starts in the whole listing (error messages)
	parts []ListingPart // the listing's part table (a whole listing's reader)
}

// NewListingReader checks a listing's header, its count and its table of
// parts against the bytes that follow.
func NewListingReader(data []byte) (*ListingReader, error) {
	r := &ListingReader{d: listingDecoder{b: data}}
	d := &r.d
	if len(data) < len(listingMagic) || string(data[:len(listingMagic)]) != listingMagic {
		return nil, errors.New("job listing: bad header (not a hora listing, or another version)")
	}
	d.off = len(listingMagic)
	// Each job takes well over 40 bytes, and each part's entry at least
	// two: a larger count is corrupt and must not allocate.
	n := d.uvarint()
	if d.err != nil {
		return nil, fmt.Errorf("job listing: header: %w", d.err)
	}
	if n > uint64(len(data)/40+1) {
		return nil, fmt.Errorf("job listing: %d jobs cannot fit in %d bytes", n, len(data))
	}
	k := d.uvarint()
	if d.err != nil {
		return nil, fmt.Errorf("job listing: header: %w", d.err)
	}
	if k > uint64(len(data)-d.off)/2 {
		return nil, fmt.Errorf("job listing: %d parts cannot fit in %d bytes", k, len(data))
	}
	r.parts = make([]ListingPart, k)
	var jobs, size uint64
	for i := range r.parts {
		pj, pb := d.uvarint(), d.uvarint()
		if d.err != nil {
			return nil, fmt.Errorf("job listing: part table: %w", d.err)
		}
		jobs, size = jobs+pj, size+pb
		if jobs > n || size > uint64(len(data)) || pj > pb/40+1 {
			return nil, fmt.Errorf("job listing: part %d of %d (%d jobs, %d bytes) does not fit the listing", i+1, k, pj, pb)
		}
		r.parts[i] = ListingPart{Jobs: int(pj), Bytes: int(pb)}
	}
	if jobs != n || size != uint64(len(data)-d.off) {
		return nil, fmt.Errorf("job listing: parts of %d jobs in %d bytes, but %d jobs in %d bytes follow the header",
			jobs, size, n, len(data)-d.off)
	}
	r.n = int(n)
	return r, nil
}

// Parts returns a reader for each part of a listing that no job has been
// read from yet: they may be read at once, one goroutine each. Offsets
// (Next, At) are each reader's own.
func (r *ListingReader) Parts() []*ListingReader {
	out := make([]*ListingReader, 0, len(r.parts))
	off := r.d.off
	for _, p := range r.parts {
		out = append(out, &ListingReader{d: listingDecoder{b: r.d.b[off : off+p.Bytes]}, n: p.Jobs, base: r.base + off})
		off += p.Bytes
	}
	return out
}

// Len is the number of jobs in the listing.
func (r *ListingReader) Len() int { return r.n }

// Index is the number of jobs Next has decoded so far.
func (r *ListingReader) Index() int { return r.i }

// Next decodes the next job into j (all of j is overwritten) and returns
// the offset it started at, for At; io.EOF after the last job.
func (r *ListingReader) Next(j *Job) (int, error) {
	if r.i >= r.n {
		return 0, io.EOF
	}
	r.i++
	off := r.d.off
	end, err := r.decode(off, j)
	if err != nil {
		return 0, fmt.Errorf("job listing: job %d of %d (byte %d): %w", r.i, r.n, r.base+off, err)
	}
	r.d.off = end
	return off, nil
}

// At decodes into j the job that starts at off, an offset Next returned.
func (r *ListingReader) At(off int, j *Job) error {
	_, err := r.decode(off, j)
	return err
}

// decode decodes the job at off into j and says where it ends.
func (r *ListingReader) decode(off int, j *Job) (int, error) {
	d := listingDecoder{b: r.d.b, off: off}
	*j = Job{}
	d.job(j)
	return d.off, d.err
}

// End checks that the listing ends after its last job.
func (r *ListingReader) End() error {
	if r.d.off != len(r.d.b) {
		return fmt.Errorf("job listing: %d bytes left after %d jobs", len(r.d.b)-r.d.off, r.n)
	}
	return nil
}

type listingDecoder struct {
	b   []byte
	off int
	err error
}

var errTruncated = errors.New("truncated or malformed")

// fail keeps the first error and moves to the end of the bytes, so that
// every later read fails at once: the reads' fast paths check only the
// offset, which lets the compiler inline them (a job is about a hundred
// reads; squeue over 100,000 jobs spent a fifth of its decoding in the
// calls).
func (d *listingDecoder) fail(err error) {
	if d.err == nil {
		d.err = err
	}
}

func (d *listingDecoder) uvarint() uint64 {
	// Most numbers of a listing (lengths, counts, small fields) take one
	// byte: read those without a call (squeue decodes every job twice).
	if d.off < len(d.b) && d.b[d.off] < 0x80 && d.err == nil {
		v := uint64(d.b[d.off])
		d.off++
		return v
	}
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b[d.off:])
	if n <= 0 {
		d.fail(errTruncated)
		return 0
	}
	d.off += n
	return v
}

func (d *listingDecoder) varint() int64 {
	if d.off < len(d.b) && d.b[d.off] < 0x80 && d.err == nil {
		u := int64(d.b[d.off]) // zig-zag, as binary.Varint
		d.off++
		return u>>1 ^ -(u & 1)
	}
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b[d.off:])
	if n <= 0 {
		d.fail(errTruncated)
		return 0
	}
	d.off += n
	return v
}

func (d *listingDecoder) int() int { return int(d.varint()) }

func (d *listingDecoder) str() string {
	n := d.uvarint()
	if d.err != nil {
		return ""
	}
	if n > uint64(len(d.b)-d.off) {
		d.fail(errTruncated)
		return ""
	}
	if n == 0 {
		return ""
	}
	// The string shares the listing's bytes: no allocation and no copy
	// for any of a listing's strings (ListingReader).
	s := unsafe.String(&d.b[d.off], int(n))
	d.off += int(n)
	return s
}

func (d *listingDecoder) strs() []string {
	n := d.uvarint()
	if d.err != nil || n == 0 {
		return nil
	}
	if n > uint64(len(d.b)-d.off) { // every string takes at least one byte
		d.fail(errTruncated)
		return nil
	}
	out := make([]string, n)
	for i := range out {
		out[i] = d.str()
	}
	return out
}

func (d *listingDecoder) bool() bool {
	if d.err != nil {
		return false
	}
	if d.off >= len(d.b) {
		d.fail(errTruncated)
		return false
	}
	v := d.b[d.off]
	d.off++
	if v > 1 {
		d.fail(fmt.Errorf("bad boolean %d at byte %d", v, d.off-1))
	}
	return v == 1
}

func (d *listingDecoder) float() float64 {
	if d.err != nil {
		return 0
	}
	if len(d.b)-d.off < 8 {
		d.fail(errTruncated)
		return 0
	}
	v := math.Float64frombits(binary.LittleEndian.Uint64(d.b[d.off:]))
	d.off += 8
	return v
}

func (d *listingDecoder) job(j *Job) {
	j.ID = d.varint()
	s := &j.Spec
	s.Name = d.str()
	s.Script = d.str()
	s.Command = d.str()
	s.Args = d.strs()
	s.WorkDir = d.str()
	s.Stdout = d.str()
	s.Stderr = d.str()
	s.Stdin = d.str()
	s.Env = d.strs()
	s.Export = d.str()
	s.Partition = d.str()
	s.Nodes, s.NodesMax, s.NTasks, s.CPUsPerTask = d.int(), d.int(), d.int(), d.int()
	s.MemMB, s.TimeLimit, s.TimeMin, s.Begin, s.Deadline = d.varint(), d.varint(), d.varint(), d.varint(), d.varint()
	s.Hold = d.bool()
	s.Requeue = d.bool()
	s.NoRequeue = d.bool()
	s.Load = d.float()
	s.Input, s.Reservation, s.Account, s.QOS, s.Comment, s.SubmitHost = d.str(), d.str(), d.str(), d.str(), d.str(), d.str()
	s.OpenAppend = d.bool()
	s.MailType, s.MailUser = d.str(), d.str()
	s.Alloc = d.bool()
	s.Array, s.Dependency, s.KillOnInvalidDep = d.str(), d.str(), d.str()
	s.Nice = d.int()
	s.Signal = d.str()
	s.NTasksPerNode, s.MemPerCPU, s.MemPerGPU, s.CPUsPerGPU, s.MinCPUs = d.int(), d.varint(), d.varint(), d.int(), d.int()
	s.Gres, s.GPUs, s.GPUsPerNode, s.GPUsPerTask = d.str(), d.str(), d.str(), d.str()
	s.Exclusive, s.NodeList, s.Exclude, s.Constraint = d.str(), d.str(), d.str(), d.str()
	s.MemAll = d.bool()
	s.Oversubscribe = d.bool()
	s.NoMultithread = d.bool()
	if d.bool() {
		s.PBS = &PBSSpec{Server: d.str(), Flavour: d.str(), Queue: d.str()}
		s.PBS.PPN = d.int()
		s.PBS.Shell = d.str()
	}
	s.RTFrame = d.float()
	s.RTBuffer = d.int()
	if n := d.uvarint(); n > 0 && d.err == nil {
		if n > uint64(len(d.b)-d.off)/8 {
			d.fail(errTruncated)
		} else {
			s.RTWork = make([]float64, n)
			for k := range s.RTWork {
				s.RTWork[k] = d.float()
			}
		}
	}
	s.RTMisses = d.int()

	j.UID = uint32(d.uvarint())
	j.GID = uint32(d.uvarint())
	j.User, j.Group, j.State, j.Reason = d.str(), d.str(), JobState(d.str()), d.str()
	j.Priority, j.SubmitTime, j.EligibleTime, j.StartTime, j.ExpectedStart, j.EndTime =
		d.varint(), d.varint(), d.varint(), d.varint(), d.varint(), d.varint()
	j.SuspendTime, j.SuspendedSecs = d.varint(), d.varint()
	j.Nodes = d.strs()
	j.ExitCode, j.Signal, j.CancelledBy, j.Restarts = d.int(), d.int(), d.varint(), d.int()
	if n := d.uvarint(); n > 0 && d.err == nil {
		if n > uint64(len(d.b)-d.off)/20 { // a step takes at least 22 bytes
			d.fail(errTruncated)
			return
		}
		j.Steps = make([]Step, n)
		for i := range j.Steps {
			st := &j.Steps[i]
			st.Index = d.int()
			st.Node = d.str()
			st.Name = d.str()
			st.NTasks = d.int()
			st.CPUs = d.int()
			st.State = JobState(d.str())
			st.Offset = d.float()
			st.Size = d.float()
			st.StartTime, st.EndTime, st.ExitCode, st.Signal, st.TimeLimit = d.varint(), d.varint(), d.int(), d.int(), d.varint()
		}
	}
	j.StdoutPath = d.str()
	j.StderrPath = d.str()
	j.ArrayJobID, j.ArrayTaskID, j.ArrayThrottle = d.varint(), d.varint(), d.int()
	if n := d.uvarint(); n > 0 && d.err == nil {
		if n > uint64(len(d.b)-d.off) { // a task id takes at least one byte
			d.fail(errTruncated)
			return
		}
		j.ArrayPending = make([]int64, n)
		for i := range j.ArrayPending {
			j.ArrayPending[i] = d.varint()
		}
	}
	j.Dependency = d.str()
	j.MaxRSSKB, j.TotalCPUMs = d.varint(), d.varint()
	if n := d.uvarint(); n > 0 && d.err == nil {
		if n > uint64(len(d.b)-d.off)/6 { // an allocation takes at least 6 bytes
			d.fail(errTruncated)
			return
		}
		j.Alloc = make([]NodeAlloc, n)
		for i := range j.Alloc {
			a := &j.Alloc[i]
			a.Node = d.str()
			a.CPUs = d.ints()
			a.MemMB = d.varint()
			a.Tasks = d.int()
			a.Gres = d.str()
			a.GPUs = d.ints()
		}
	}
}

func (d *listingDecoder) ints() []int {
	n := d.uvarint()
	if d.err != nil || n == 0 {
		return nil
	}
	if n > uint64(len(d.b)-d.off) { // every int takes at least one byte
		d.fail(errTruncated)
		return nil
	}
	out := make([]int, n)
	for i := range out {
		out[i] = d.int()
	}
	return out
}
