package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"hora/api"
	"hora/sbatch"
)

// scontrol create/update/delete/show reservation (COMPAT.md §5.3, §8.2).
// The key=value words are parsed here, so that a typo is reported before
// anything reaches horad; horad books the reservation or refuses it.

// resvKeys are the keywords of create/update in the order scontrol tries
// them, each with the shortest abbreviation it accepts (scontrol compares
// case-insensitively max(len(word), min) characters, so a word matches a key
// when it is a prefix at least min long; the first match wins).
var resvKeys = []struct {
	key, alias string
	min        int
}{
	{"ReservationName", "", 1}, {"StartTime", "", 1}, {"EndTime", "", 1}, {"Duration", "", 1},
	{"Flags", "", 2}, {"NodeCnt", "", 5}, {"NodeCount", "NodeCnt", 5}, {"CoreCnt", "", 5},
	{"CPUCnt", "CoreCnt", 5}, {"Nodes", "", 5}, {"Features", "", 2}, {"Licenses", "", 2},
	{"PartitionName", "", 1}, {"Users", "", 1}, {"Accounts", "", 1}, {"Groups", "", 1},
	{"TRES", "", 4}, {"BurstBuffer", "", 2}, {"Watts", "", 2}, {"QOS", "", 3},
	{"AllowedPartitions", "", 7}, {"MaxStartDelay", "", 3}, {"Skip", "", 4},
}

// resvFlags are the flags hora knows; all but those in resvFlagsApplied are
// recorded and shown but change nothing (hora reservations never overlap
// and never float, and ignore running jobs only when none can be there).
var resvFlags = []string{"MAINT", "IGNORE_JOBS", "OVERLAP", "DAILY", "WEEKLY", "WEEKDAY", "WEEKEND",
	"HOURLY", "FLEX", "MAGNETIC", "PURGE_COMP", "REPLACE", "REPLACE_DOWN", "STATIC_ALLOC", "TIME_FLOAT",
	"PART_NODES", "ANY_NODES", "LICENSE_ONLY", "NO_HOLD_JOBS_AFTER", "USER_DELETE", "FORCE_START"}

// resvFlagsRefused change the meaning of a reservation in ways hora cannot
// honour (overlapping or repeating windows, jobs outside the window).
var resvFlagsRefused = []string{"OVERLAP", "DAILY", "WEEKLY", "WEEKDAY", "WEEKEND", "HOURLY", "FLEX",
	"MAGNETIC", "TIME_FLOAT", "REPLACE", "REPLACE_DOWN", "ANY_NODES", "LICENSE_ONLY"}

// resvKey resolves a keyword; "" when unknown. "Reservation" (any prefix
// of ReservationName) names the reservation.
func resvKey(tag string) string {
	for _, k := range resvKeys {
		if len(tag) >= k.min && len(tag) <= len(k.key) && strings.EqualFold(k.key[:len(tag)], tag) {
			if k.alias != "" {
				return k.alias
			}
			return k.key
		}
	}
	return ""
}

// resvParseError is a client-side refusal, printed as scontrol prints it.
type resvParseError struct{ msg string }

func (e *resvParseError) Error() string { return e.msg }

// parseResvArgs turns the key=value words of create (update: true for
// update) into a request. Times are Slurm's (COMPAT.md §1.4, §1.5).
func parseResvArgs(words []string, update bool, now time.Time) (*api.ReservationRequest, error) {
	tail := "  No reservation created."
	if update {
		tail = "  No reservation update."
	}
	fail := func(format string, a ...any) (*api.ReservationRequest, error) {
		return nil, &resvParseError{fmt.Sprintf(format, a...) + tail}
	}
	req := &api.ReservationRequest{}
	for _, w := range words {
		tag, val, ok := strings.Cut(w, "=")
		if !ok {
			return fail("Unknown parameter %s.", w)
		}
		op := byte('=')
		if n := len(tag); n > 0 && (tag[n-1] == '+' || tag[n-1] == '-') {
			op, tag = tag[n-1], tag[:n-1]
		}
		key := resvKey(tag)
		if key == "" {
			return fail("Unknown parameter %s.", w)
		}
		if op != '=' && key != "Users" && key != "Nodes" && key != "Flags" {
			return fail("Unknown parameter %s.", w)
		}
		if op != '=' && !update {
			return fail("Unknown parameter %s.", w)
		}
		if key != "ReservationName" && op == '=' {
			// Users+= and Users-= change the list; only Users= replaces it.
			req.Set = append(req.Set, strings.ToLower(key))
		}
		switch key {
		case "ReservationName":
			if val == "" || strings.ContainsAny(val, " \t,") {
				return fail("Invalid reservation name %s.", val)
			}
			req.Name = val
		case "StartTime":
			t, err := sbatch.ParseSlurmTime(val, now)
			if err != nil {
				return fail("Invalid start time %s.", w)
			}
			req.StartTime = t.Unix()
		case "EndTime":
			t, err := sbatch.ParseSlurmTime(val, now)
			if err != nil {
				return fail("Invalid end time %s.", w)
			}
			req.EndTime = t.Unix()
		case "Duration":
			d, err := sbatch.ParseSlurmDuration(val)
			if err != nil || d == api.NoLimit || d <= 0 {
				// hora books finite windows: UNLIMITED would hold the nodes forever.
				return fail("Invalid duration %s.", w)
			}
			req.Duration = d
		case "Nodes":
			var nodes []string
			if strings.EqualFold(val, "ALL") {
				nodes = []string{"ALL"}
			} else {
				hs, err := sbatch.ExpandHostlist(val)
				if err != nil || len(hs) == 0 {
					return fail("Invalid node list %s.", w)
				}
				nodes = hs
			}
			switch op {
			case '+':
				req.AddNodes = append(req.AddNodes, nodes...)
			case '-':
				req.RemoveNodes = append(req.RemoveNodes, nodes...)
			default:
				req.Nodes = nodes
			}
		case "NodeCnt":
			n, err := parseNodeCnt(val)
			if err != nil {
				return fail("Invalid node count %s.", w)
			}
			req.NodeCount = n
		case "Users":
			var us []string
			for _, u := range strings.Split(val, ",") {
				if u == "" {
					return fail("Invalid user list %s.", val)
				}
				us = append(us, u)
			}
			switch op {
			case '+':
				req.AddUsers = append(req.AddUsers, us...)
			case '-':
				req.RemoveUsers = append(req.RemoveUsers, us...)
			default:
				req.Users = us
			}
		case "PartitionName":
			if val == "" {
				return fail("Invalid partition name %s.", val)
			}
			req.Partition = val
		case "Flags":
			if op != '=' {
				return fail("Flags%c= is not supported by hora; give the whole list with Flags=.", op)
			}
			req.Flags = nil
			for _, f := range strings.Split(val, ",") {
				u := strings.ToUpper(f)
				name, _, _ := strings.Cut(u, "=") // PURGE_COMP=<time>
				switch {
				case !slices.Contains(resvFlags, name):
					return fail("Error parsing flags %s.", val)
				case slices.Contains(resvFlagsRefused, name):
					return fail("Flag %s is not supported by hora (reservations never overlap, float or repeat).", name)
				}
				req.Flags = append(req.Flags, u)
			}
		default:
			// Accounts, Groups, CoreCnt, TRES, ...: access lists and
			// resources hora does not schedule by.
			return fail("%s is not supported by hora; use Users= and Nodes= or NodeCnt=.", key)
		}
	}
	if req.StartTime != 0 && req.EndTime != 0 && req.EndTime < req.StartTime {
		return fail("Start time cannot be after end time.")
	}
	if update {
		if req.Name == "" {
			return nil, &resvParseError{"Reservation must be given." + tail}
		}
		return req, nil
	}
	switch {
	case req.StartTime == 0:
		return fail("A start time must be given.")
	case req.EndTime == 0 && req.Duration == 0:
		return fail("An end time or duration must be given.")
	case req.EndTime != 0 && req.Duration != 0 && req.StartTime+req.Duration != req.EndTime:
		return fail("StartTime + Duration does not equal EndTime.")
	case len(req.Nodes) == 0 && req.NodeCount == 0:
		return fail("CoreCnt, Nodes, NodeCnt, TRES or Watts must be specified.")
	case len(req.Nodes) > 0 && req.NodeCount > 0 && !slices.Contains(req.Nodes, "ALL") && req.NodeCount != len(req.Nodes):
		return fail("NodeCnt %d does not match the %d Nodes given.", req.NodeCount, len(req.Nodes))
	case len(req.Users) == 0:
		return fail("Either Users/Groups, AllowedPartitions, QOS and/or Accounts must be specified.")
	}
	if len(req.Nodes) > 0 {
		req.NodeCount = 0
	}
	return req, nil
}

// parseNodeCnt reads NodeCnt: a positive count, with k (×1024) or m
// (×1024²) allowed as in scontrol.
func parseNodeCnt(s string) (int, error) {
	mul := 1
	if t, ok := strings.CutSuffix(strings.ToLower(s), "k"); ok {
		s, mul = t, 1024
	} else if t, ok := strings.CutSuffix(strings.ToLower(s), "m"); ok {
		s, mul = t, 1024*1024
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 || n > 1<<20 {
		return 0, fmt.Errorf("invalid node count %q", s)
	}
	return n * mul, nil
}

// scontrolResv runs create/update/delete of a reservation.
func scontrolResv(ctx context.Context, env *Env, verb string, words []string) int {
	errf := func(format string, a ...any) int {
		fmt.Fprintf(env.Stderr, "%s: error: "+format+"\n", append([]any{env.Prog}, a...)...)
		return 1
	}
	switch verb {
	case "create":
		// "create reservation|res ..."
		if len(words) == 0 || !isResvEntity(words[0]) {
			if len(words) == 0 {
				fmt.Fprintf(env.Stderr, "too few arguments for keyword:%s\n", verb)
				return 1
			}
			fmt.Fprintf(env.Stderr, "invalid entity:%s for keyword:create \n", words[0])
			return 1
		}
		req, err := parseResvArgs(words[1:], false, nowFunc())
		if err != nil {
			return errf("%v", err)
		}
		cl := dial(env)
		if cl == nil {
			return 1
		}
		resp, err := cl.CreateReservation(ctx, *req)
		if err != nil {
			fmt.Fprintf(env.Stderr, "Error creating the reservation: %s\n", resvErrText(err, env))
			return 1
		}
		fmt.Fprintf(env.Stdout, "Reservation created: %s\n", resp.Reservation.Name)
		return 0
	case "update":
		if len(words) > 0 && isResvEntity(words[0]) && !strings.Contains(words[0], "=") {
			words = words[1:]
		}
		req, err := parseResvArgs(words, true, nowFunc())
		if err != nil {
			return errf("%v", err)
		}
		cl := dial(env)
		if cl == nil {
			return 1
		}
		if _, err := cl.UpdateReservation(ctx, *req); err != nil {
			fmt.Fprintf(env.Stderr, "Error updating the reservation: %s\n", resvErrText(err, env))
			return 1
		}
		fmt.Fprintln(env.Stdout, "Reservation updated.")
		return 0
	}
	// delete ReservationName=<n> | delete reservation <n>
	name := ""
	switch {
	case len(words) == 1:
		if tag, val, ok := strings.Cut(words[0], "="); ok && resvKey(tag) == "ReservationName" {
			name = val
		}
	case len(words) == 2 && isResvEntity(words[0]):
		name = words[1]
	}
	if name == "" {
		if len(words) == 0 {
			fmt.Fprintf(env.Stderr, "too few arguments for keyword:%s\n", verb)
			return 1
		}
		fmt.Fprintf(env.Stderr, "invalid entity:%s for keyword:delete \n", strings.Join(words, " "))
		return 1
	}
	cl := dial(env)
	if cl == nil {
		return 1
	}
	if err := cl.DeleteReservation(ctx, name); err != nil {
		fmt.Fprintf(env.Stderr, "delete_reservation ReservationName=%s: %s\n", name, apiErrText(err))
		return 1
	}
	return 0
}

// isResvEntity reports whether w names the reservation entity
// ("reservation", "reservations", "res", "ReservationName=x").
func isResvEntity(w string) bool {
	w = strings.ToLower(w)
	if tag, _, ok := strings.Cut(w, "="); ok {
		return resvKey(tag) == "ReservationName"
	}
	return len(w) >= 3 && (strings.HasPrefix("reservations", w) || strings.HasPrefix("reservationname", w))
}

// resvErrText is the daemon's strerror plus, when the window could not be
// booked, the earliest start that would fit (hora's addition, as sbatch
// adds the earliest feasible start to a refused booking).
func resvErrText(err error, env *Env) string {
	msg := apiErrText(err)
	var ae *api.Error
	if errors.As(err, &ae) && ae.EarliestStart > 0 {
		msg += " (earliest feasible start " + sbatch.FormatTimestamp(ae.EarliestStart, timeFormat(env), nowFunc()) + ")"
	}
	return msg
}

// showReservations prints `scontrol show reservation [name]`.
func showReservations(ctx context.Context, env *Env, name string, oneliner bool) int {
	cl := dial(env)
	if cl == nil {
		return 1
	}
	resp, err := cl.Reservations(ctx, name)
	var nodes []api.Node
	if err == nil {
		nodes, err = cl.Nodes(ctx)
	}
	if err != nil {
		fmt.Fprintf(env.Stderr, "slurm_load_reservations error: %s\n", apiErrText(err))
		return 1
	}
	if len(resp.Reservations) == 0 {
		if name != "" {
			fmt.Fprintf(env.Stdout, "Reservation %s not found\n", name)
			return 1
		}
		fmt.Fprintln(env.Stdout, "No reservations in the system")
		return 0
	}
	// State= is decided by horad's clock, the one that purges the
	// reservation at its end and marks its nodes reserved.
	now := nowFunc()
	if resp.Now != 0 {
		now = time.Unix(resp.Now, 0)
	}
	writeReservations(env.Stdout, resp.Reservations, nodes, now, timeFormat(env), oneliner)
	return 0
}

// writeReservations lays out reservation records as COMPAT.md §5.3 gives
// scontrol's (src/api/reservation_info.c).
func writeReservations(w io.Writer, rs []api.Reservation, nodes []api.Node, now time.Time, tfmt string, oneliner bool) {
	cpus := map[string]int{}
	for _, n := range nodes {
		cpus[n.Name] = n.CPUs
	}
	for i := range rs {
		r := &rs[i]
		cores := 0
		for _, n := range r.Nodes {
			cores += max(cpus[n], 1)
		}
		state := "INACTIVE"
		if r.StartTime <= now.Unix() && now.Unix() <= r.EndTime {
			state = "ACTIVE"
		}
		t := func(u int64) string { return fmtTime(u, tfmt, now) }
		rec := &record{}
		rec.add("ReservationName="+r.Name, "StartTime="+t(r.StartTime), "EndTime="+t(r.EndTime),
			"Duration="+sbatch.FormatLongDuration(r.EndTime-r.StartTime))
		rec.add("Nodes="+orNull(hostlist(r.Nodes)), "NodeCnt="+strconv.Itoa(len(r.Nodes)),
			"CoreCnt="+strconv.Itoa(cores), "Features=(null)", "PartitionName="+orNull(r.Partition),
			"Flags="+strings.Join(r.Flags, ","))
		rec.add(fmt.Sprintf("TRES=cpu=%d", cores))
		rec.add("AllowedPartitions=(null)", "QOS=(null)")
		rec.add("Users="+orNull(strings.Join(r.Users, ",")), "Groups=(null)", "Accounts=(null)",
			"Licenses=(null)", "State="+state, "BurstBuffer=(null)")
		rec.add("MaxStartDelay=(null)")
		rec.write(w, oneliner)
	}
}
