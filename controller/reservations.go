package controller

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"hora/api"
	"hora/config"
	"hora/scheduler"
	"hora/scheduler/reserve"
)

// Advance reservations (scontrol create/update/delete/show reservation).
//
// A reservation belongs to one partition whose policy is "reserve": it is
// booked into that partition's idle-period index, so rigid deadline jobs and
// other reservations never overlap it, and the jobs that ask for it
// (--reservation) are booked inside it. Batch and dlt partitions plan no
// future, so a reservation cannot be made on them (a clear error says so).
// Every change is committed to the store before the client hears of it; on
// restart the reservations are booked again before any job is restored.

func resvErr(code, format string, a ...any) *api.Error {
	return &api.Error{Code: code, Message: fmt.Sprintf(format, a...)}
}

// reservePolicy returns the reserve policy of a partition.
func (c *Controller) reservePolicy(partition string) (*reserve.Policy, error) {
	pol, ok := c.eng.Policy(partition)
	if !ok {
		return nil, resvErr(api.CodeInvalidPartition, "Invalid partition name specified")
	}
	rp, ok := pol.(*reserve.Policy)
	if !ok {
		spec, _ := c.eng.PartitionSpec(partition)
		return nil, resvErr(api.CodeInvalidPartition,
			"Partition %s has policy %q; reservations and the range search need a partition with policy \"reserve\"", partition, spec.Policy)
	}
	return rp, nil
}

// resvPartition picks the partition of a reservation: the one named, else
// the first reserve partition holding every named node (the default
// partition first).
func (c *Controller) resvPartition(name string, nodes []string) (string, error) {
	for _, n := range nodes {
		if !strings.EqualFold(n, "ALL") && !slices.ContainsFunc(c.nodes, func(cn config.Node) bool { return cn.Name == n }) {
			return "", resvErr(api.CodeReservation, "Invalid node name specified: %s", n)
		}
	}
	if name != "" {
		_, err := c.reservePolicy(name)
		return name, err
	}
	cands := []string{c.defaultPartition()}
	for _, p := range c.cfg.Partitions {
		cands = append(cands, p.Name)
	}
	for _, p := range cands {
		if _, err := c.reservePolicy(p); err != nil {
			continue
		}
		spec, _ := c.eng.PartitionSpec(p)
		ok := true
		for _, n := range nodes {
			ok = ok && (strings.EqualFold(n, "ALL") || slices.Contains(spec.Nodes, n))
		}
		if ok {
			return p, nil
		}
	}
	return "", resvErr(api.CodeInvalidPartition, "No partition with policy \"reserve\" holds the requested nodes; name one with PartitionName=")
}

// mayManageResv: root and operators always; with reservation_access =
// "users", a user for a reservation whose only user is themselves.
func (c *Controller) mayManageResv(who *Caller, users ...[]string) bool {
	if c.operators[who.UID] {
		return true
	}
	if c.cfg.ReservationAccess != "users" {
		return false
	}
	for _, u := range users {
		if len(u) != 1 || u[0] != who.User {
			return false
		}
	}
	return true
}

// toResv converts an api reservation to the policy's form.
func (c *Controller) toResv(r *api.Reservation, count int) (reserve.Resv, error) {
	spec, _ := c.eng.PartitionSpec(r.Partition)
	out := reserve.Resv{Name: r.Name, Start: r.StartTime, End: r.EndTime, Count: count}
	for _, n := range r.Nodes {
		if strings.EqualFold(n, "ALL") {
			out.Nodes = out.Nodes[:0]
			for i := range spec.Nodes {
				out.Nodes = append(out.Nodes, i)
			}
			break
		}
		i := slices.Index(spec.Nodes, n)
		if i < 0 {
			return out, resvErr(api.CodeReservation, "Invalid node name specified: %s is not in partition %s", n, r.Partition)
		}
		out.Nodes = append(out.Nodes, i)
	}
	for _, u := range r.Users {
		uid, ok := lookupUID(u)
		if !ok {
			return out, resvErr(api.CodeReservation, "Invalid user id: %s", u)
		}
		out.Users = append(out.Users, uid)
	}
	return out, nil
}

// fromResv fills the booked nodes into r. The times stay as asked: a
// window that began in the past is booked from now on, but shows its start.
func (c *Controller) fromResv(r *api.Reservation, b reserve.Resv) {
	spec, _ := c.eng.PartitionSpec(r.Partition)
	r.Nodes = r.Nodes[:0:0]
	for _, i := range b.Nodes {
		r.Nodes = append(r.Nodes, spec.Nodes[i])
	}
}

// resvNodeView marks a node that lies in a reservation active now: Slurm
// sets NODE_STATE_RES on it for the window, and NODE_STATE_MAINT too when
// the reservation has Flags=MAINT. The window is the booked one, [Start,
// End): at End the booking is over and the tick purges it. Slurm 22.05's
// node_state_string tests MAINT first (an idle node is MAINT, MAINT* when
// it does not answer; other states get a "$" suffix, the client's part),
// then drain, then "not responding", and the reservation flag last: an idle
// node that answers shows RESERVED, a drained one stays drained, one that
// does not answer IDLE*, an allocated one keeps its state.
func (c *Controller) resvNodeView(n *api.Node, now int64) {
	for _, r := range c.resvs {
		if r.StartTime <= now && now < r.EndTime && slices.Contains(r.Nodes, n.Name) {
			n.Reserved = true
			n.Maint = n.Maint || slices.ContainsFunc(r.Flags, func(f string) bool { return strings.EqualFold(f, "MAINT") })
		}
	}
	switch {
	case n.State != "idle":
	case n.Maint:
		n.State = "maint"
	case n.Reserved && !n.NotResponding:
		n.State = "reserved"
	}
}

// checkNodeNames refuses node names that are not in the partition, as
// Slurm refuses an unknown node in Nodes+=/Nodes-=.
func (c *Controller) checkNodeNames(part string, lists ...[]string) error {
	spec, _ := c.eng.PartitionSpec(part)
	for _, l := range lists {
		for _, n := range l {
			if !strings.EqualFold(n, "ALL") && !slices.Contains(spec.Nodes, n) {
				return resvErr(api.CodeReservation, "Invalid node name specified: %s is not in partition %s", n, part)
			}
		}
	}
	return nil
}

func bookErr(err error) error {
	var re *reserve.ResvError
	if errors.As(err, &re) {
		return &api.Error{Code: re.Code, Message: re.Message, EarliestStart: re.EarliestStart}
	}
	var ae *api.Error
	if errors.As(err, &ae) {
		return ae
	}
	return &api.Error{Code: api.CodeInternal, Message: err.Error()}
}

// checkResvRequest validates what every create must carry (scontrol checks
// the same on its side; a raw request gets the same answers).
func checkResvRequest(req *api.ReservationRequest, now int64) error {
	switch {
	case req.StartTime == 0:
		return resvErr(api.CodeBadRequest, "A start time must be given.  No reservation created.")
	case req.EndTime == 0 && req.Duration <= 0:
		return resvErr(api.CodeBadRequest, "An end time or duration must be given.  No reservation created.")
	case req.EndTime != 0 && req.Duration > 0 && req.StartTime+req.Duration != req.EndTime:
		return resvErr(api.CodeBadRequest, "StartTime + Duration does not equal EndTime.  No reservation created.")
	case req.EndTime != 0 && req.EndTime < req.StartTime:
		return resvErr(api.CodeBadRequest, "Start time cannot be after end time.  No reservation created.")
	case req.EndTime != 0 && req.EndTime == req.StartTime:
		return resvErr(api.CodeReservation, "Requested reservation is invalid")
	case len(req.Nodes) == 0 && req.NodeCount <= 0:
		return resvErr(api.CodeBadRequest, "CoreCnt, Nodes, NodeCnt, TRES or Watts must be specified.  No reservation created.")
	case len(req.Users) == 0:
		return resvErr(api.CodeBadRequest, "Either Users/Groups, AllowedPartitions, QOS and/or Accounts must be specified.  No reservation created.")
	case req.EndTime == 0 && req.StartTime+req.Duration <= now:
		return resvErr(api.CodeReservation, "Requested reservation is invalid")
	case req.EndTime != 0 && req.EndTime <= now:
		return resvErr(api.CodeReservation, "Requested reservation is invalid")
	}
	return nil
}

func (c *Controller) createReservation(ctx context.Context, who *Caller, req api.ReservationRequest) (*api.ReservationResponse, error) {
	now := c.now().Unix()
	if err := checkResvRequest(&req, now); err != nil {
		return nil, err
	}
	if !c.mayManageResv(who, req.Users) {
		return nil, resvErr(api.CodeAccessDenied, "Access/permission denied")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	part, err := c.resvPartition(req.Partition, req.Nodes)
	if err != nil {
		return nil, err
	}
	pol, _ := c.reservePolicy(part)
	name := req.Name
	if name == "" {
		// Slurm names an unnamed reservation <first user>_<n>.
		for n := 1; ; n++ {
			name = req.Users[0] + "_" + strconv.Itoa(n)
			if _, dup := c.resvs[name]; !dup {
				break
			}
		}
	}
	if _, dup := c.resvs[name]; dup {
		return nil, resvErr(api.CodeReservation, "Duplicate reservation name")
	}
	end := req.EndTime
	if end == 0 {
		end = req.StartTime + req.Duration
	}
	r := api.Reservation{Name: name, Partition: part, StartTime: req.StartTime, EndTime: end,
		Nodes: req.Nodes, Users: req.Users, Flags: req.Flags}
	rv, err := c.toResv(&r, req.NodeCount)
	if err != nil {
		return nil, err
	}
	booked, err := pol.CreateResv(c.nowSec(), rv)
	if err != nil {
		return nil, bookErr(err)
	}
	c.fromResv(&r, booked)
	if err := c.st.PutReservation(ctx, r); err != nil {
		_ = pol.DeleteResv(c.nowSec(), name)
		return nil, resvErr(api.CodeInternal, "Unable to record the reservation: %v", err)
	}
	c.resvs[name] = &r
	c.log.Info("reservation created", "reservation", name, "partition", part, "uid", who.UID)
	c.applyLocked(ctx, c.eng.Handle(scheduler.Tick{Now: c.nowSec()}))
	return &api.ReservationResponse{Reservation: r}, nil
}

func (c *Controller) updateReservation(ctx context.Context, who *Caller, req api.ReservationRequest) (*api.ReservationResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.resvs[req.Name]
	if old == nil {
		return nil, resvErr(api.CodeReservation, "Requested reservation is invalid")
	}
	set := func(k string) bool { return slices.Contains(req.Set, k) }
	r := *old
	r.Nodes, r.Users = slices.Clone(old.Nodes), slices.Clone(old.Users)
	dur := old.EndTime - old.StartTime
	if set("starttime") {
		r.StartTime = req.StartTime
		r.EndTime = r.StartTime + dur // a moved start keeps the length
	}
	if set("duration") {
		r.EndTime = r.StartTime + req.Duration
	}
	if set("endtime") {
		r.EndTime = req.EndTime
	}
	if r.EndTime <= r.StartTime {
		return nil, resvErr(api.CodeBadRequest, "Start time cannot be after end time.  No reservation created.")
	}
	count := len(old.Nodes)
	if set("nodes") {
		r.Nodes = req.Nodes
	}
	// Nodes+= and Nodes-= change the list as Slurm does: a node added twice
	// or removed when absent changes nothing. A list left empty is refused.
	for _, n := range req.AddNodes {
		if !slices.Contains(r.Nodes, n) {
			r.Nodes = append(r.Nodes, n)
		}
	}
	r.Nodes = slices.DeleteFunc(r.Nodes, func(n string) bool { return slices.Contains(req.RemoveNodes, n) })
	nodesChanged := set("nodes") || len(req.AddNodes) > 0 || len(req.RemoveNodes) > 0
	if nodesChanged {
		if err := c.checkNodeNames(r.Partition, req.AddNodes, req.RemoveNodes); err != nil {
			return nil, err
		}
		if len(r.Nodes) == 0 {
			return nil, resvErr(api.CodeReservation, "%s (no node left in reservation %s)", reserve.MsgNodeConfig, r.Name)
		}
		count = len(r.Nodes)
	}
	if set("nodecnt") {
		// NodeCnt= resizes: a smaller count keeps the reservation's
		// lowest-numbered nodes, a larger one keeps them all and adds free
		// ones (the policy picks them), so a resize never moves the nodes
		// that stay.
		spec, _ := c.eng.PartitionSpec(r.Partition)
		slices.SortFunc(r.Nodes, func(a, b string) int { return slices.Index(spec.Nodes, a) - slices.Index(spec.Nodes, b) })
		count = req.NodeCount
		if count > 0 && count < len(r.Nodes) {
			r.Nodes = r.Nodes[:count]
		}
	}
	if set("users") {
		r.Users = req.Users
	}
	for _, u := range req.AddUsers {
		if !slices.Contains(r.Users, u) {
			r.Users = append(r.Users, u)
		}
	}
	r.Users = slices.DeleteFunc(r.Users, func(u string) bool { return slices.Contains(req.RemoveUsers, u) })
	if len(r.Users) == 0 {
		return nil, resvErr(api.CodeBadRequest, "Either Users/Groups, AllowedPartitions, QOS and/or Accounts must be specified.  No reservation created.")
	}
	if set("flags") {
		r.Flags = req.Flags
	}
	if !c.mayManageResv(who, old.Users, r.Users) {
		return nil, resvErr(api.CodeAccessDenied, "Access/permission denied")
	}
	pol, err := c.reservePolicy(r.Partition)
	if err != nil {
		return nil, err
	}
	rv, err := c.toResv(&r, count)
	if err != nil {
		return nil, err
	}
	prev, _ := c.toResv(old, len(old.Nodes))
	if !nodesChanged && !set("nodecnt") {
		rv.Nodes = prev.Nodes // same nodes, so that a users-only change is in place
	}
	booked, err := pol.UpdateResv(c.nowSec(), rv)
	if err != nil {
		return nil, bookErr(err)
	}
	c.fromResv(&r, booked)
	if err := c.st.PutReservation(ctx, r); err != nil {
		if _, err2 := pol.UpdateResv(c.nowSec(), prev); err2 != nil {
			c.log.Error("reservation update not recorded and not undone", "reservation", r.Name, "err", err2)
		}
		return nil, resvErr(api.CodeInternal, "Unable to record the reservation: %v", err)
	}
	c.resvs[r.Name] = &r
	c.log.Info("reservation updated", "reservation", r.Name, "uid", who.UID)
	c.applyLocked(ctx, c.eng.Handle(scheduler.Tick{Now: c.nowSec()}))
	return &api.ReservationResponse{Reservation: r}, nil
}

func (c *Controller) deleteReservation(ctx context.Context, who *Caller, name string) (*api.ReservationResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.resvs[name]
	if old == nil {
		return nil, resvErr(api.CodeReservation, "Requested reservation is invalid")
	}
	if !c.mayManageResv(who, old.Users) {
		return nil, resvErr(api.CodeAccessDenied, "Access/permission denied")
	}
	if err := c.dropReservationLocked(ctx, old); err != nil {
		return nil, err
	}
	c.log.Info("reservation deleted", "reservation", name, "uid", who.UID)
	return &api.ReservationResponse{Reservation: *old}, nil
}

// dropReservationLocked removes a reservation from the policy and the store.
func (c *Controller) dropReservationLocked(ctx context.Context, r *api.Reservation) error {
	pol, err := c.reservePolicy(r.Partition)
	if err != nil {
		return err
	}
	if err := pol.DeleteResv(c.nowSec(), r.Name); err != nil {
		return bookErr(err)
	}
	if err := c.st.DeleteReservation(ctx, r.Name); err != nil {
		// Not recorded: book it again so that memory and store agree.
		if rv, err2 := c.toResv(r, len(r.Nodes)); err2 == nil {
			_, _ = pol.CreateResv(c.nowSec(), rv)
		}
		return resvErr(api.CodeInternal, "Unable to record the deletion: %v", err)
	}
	delete(c.resvs, r.Name)
	c.applyLocked(ctx, c.eng.Handle(scheduler.Tick{Now: c.nowSec()}))
	return nil
}

// expireReservationsLocked purges reservations whose window has passed and
// that no job uses any more (Slurm purges expired reservations too).
func (c *Controller) expireReservationsLocked(ctx context.Context) {
	now := c.now().Unix()
	for _, name := range slices.Sorted(mapsKeys(c.resvs)) {
		r := c.resvs[name]
		if r.EndTime > now {
			continue
		}
		if err := c.dropReservationLocked(ctx, r); err == nil {
			c.log.Info("reservation expired", "reservation", name)
		}
	}
}

func mapsKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// recoverReservations books the stored reservations again, before any job
// is restored (a job of a reservation is booked inside it). One that ended
// while horad was down is purged; one that no longer fits the configuration
// is logged and kept on disk.
func (c *Controller) recoverReservations(ctx context.Context) error {
	stored, err := c.st.Reservations(ctx)
	if err != nil {
		return err
	}
	now := c.now().Unix()
	for i := range stored {
		r := &stored[i]
		if r.EndTime <= now {
			if err := c.st.DeleteReservation(ctx, r.Name); err != nil {
				return err
			}
			continue
		}
		pol, err := c.reservePolicy(r.Partition)
		if err == nil {
			var rv reserve.Resv
			if rv, err = c.toResv(r, len(r.Nodes)); err == nil {
				var got reserve.Resv
				if got, err = pol.CreateResv(c.nowSec(), rv); err == nil {
					c.fromResv(r, got)
					c.resvs[r.Name] = r
					continue
				}
			}
		}
		c.log.Error("reservation not restored", "reservation", r.Name, "partition", r.Partition, "err", err)
	}
	return nil
}

// jobReservation checks a job's --reservation against the known
// reservations and puts the job in the reservation's partition when it
// names none. Whether the user may use it is the policy's answer.
func (c *Controller) jobReservation(s *api.JobSpec) error {
	if s.Reservation == "" {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.resvs[s.Reservation]
	if r == nil {
		return resvErr(api.CodeReservation, "Requested reservation is invalid")
	}
	if s.Partition == "" {
		s.Partition = r.Partition
	}
	if s.Partition != r.Partition {
		return resvErr(api.CodeReservation, "Requested reservation is invalid")
	}
	return nil
}

func (c *Controller) hReservations(ctx context.Context, who *Caller, r *http.Request) (any, error) {
	name := r.URL.Query().Get("name")
	c.mu.Lock()
	defer c.mu.Unlock()
	out := &api.ReservationsResponse{Reservations: []api.Reservation{}, Now: c.now().Unix()}
	for _, n := range slices.Sorted(mapsKeys(c.resvs)) {
		if name == "" || n == name {
			out.Reservations = append(out.Reservations, *c.resvs[n])
		}
	}
	return out, nil
}

func (c *Controller) hResvChange(op string) handlerFunc {
	return func(ctx context.Context, who *Caller, r *http.Request) (any, error) {
		var req api.ReservationRequest
		if err := decode(r, &req); err != nil {
			return nil, err
		}
		switch op {
		case "create":
			return c.createReservation(ctx, who, req)
		case "update":
			return c.updateReservation(ctx, who, req)
		}
		return c.deleteReservation(ctx, who, req.Name)
	}
}

// hFree is the range search: nodes of a reserve partition idle through
// [from, to), nothing booked.
func (c *Controller) hFree(ctx context.Context, who *Caller, r *http.Request) (any, error) {
	q := r.URL.Query()
	from, err1 := strconv.ParseInt(q.Get("from"), 10, 64)
	to, err2 := strconv.ParseInt(q.Get("to"), 10, 64)
	if err1 != nil || err2 != nil {
		return nil, resvErr(api.CodeBadRequest, "from, to: want Unix seconds, got %q and %q", q.Get("from"), q.Get("to"))
	}
	if to <= from {
		return nil, resvErr(api.CodeBadRequest, "to (%d) must be after from (%d)", to, from)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	part, err := c.resvPartition(q.Get("partition"), nil)
	if err != nil {
		return nil, err
	}
	pol, _ := c.reservePolicy(part)
	spec, _ := c.eng.PartitionSpec(part)
	return &api.FreeResponse{Partition: part, From: from, To: to,
		Nodes: pol.FreeIn(c.nowSec(), from, to), Total: len(spec.Nodes)}, nil
}
