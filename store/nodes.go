package store

import (
	"context"
	"database/sql"
	"fmt"
)

// NodeAdmin is the administrative state of one node: what `scontrol update
// NodeName=` and the health prober set, kept across restarts as slurmctld
// keeps its node states.
type NodeAdmin struct {
	Name  string
	Drain bool // no new work is placed on the node
	Down  bool // out of service
	// DownCause says why a down node is down: "admin" (State=DOWN) or
	// "noresp" (the health prober); ReturnToService=1 treats them apart.
	DownCause string
	Reason    string
	UID       uint32 // who set the reason
	User      string
	Time      int64 // when the reason was set, Unix seconds
}

// InService reports whether the record says nothing at all (no row needed).
func (n NodeAdmin) InService() bool { return !n.Drain && !n.Down }

// PutNodeAdmin records a node's administrative state durably; a node back
// in service loses its row.
func (s *Store) PutNodeAdmin(ctx context.Context, n NodeAdmin) error {
	if n.Name == "" {
		return fmt.Errorf("node admin state: empty node name")
	}
	if n.Down && n.DownCause != "admin" && n.DownCause != "noresp" {
		return fmt.Errorf("node %s: down cause %q is neither admin nor noresp", n.Name, n.DownCause)
	}
	return s.write(ctx, func(tx *sql.Tx) error {
		if n.InService() {
			_, err := tx.ExecContext(ctx, `DELETE FROM node_admin WHERE name = ?`, n.Name)
			return err
		}
		cause := n.DownCause
		if !n.Down {
			cause = ""
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO node_admin(name, drain, down, down_cause, reason, uid, user_name, time)
VALUES (?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (name) DO UPDATE SET drain = excluded.drain, down = excluded.down, down_cause = excluded.down_cause,
	reason = excluded.reason, uid = excluded.uid, user_name = excluded.user_name, time = excluded.time`,
			n.Name, b2i(n.Drain), b2i(n.Down), cause, n.Reason, int64(n.UID), n.User, n.Time)
		return err
	})
}

// NodeAdmins lists every node that is drained or down, by name.
func (s *Store) NodeAdmins(ctx context.Context) ([]NodeAdmin, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT name, drain, down, down_cause, reason, uid, user_name, time
FROM node_admin ORDER BY name`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []NodeAdmin
	for rows.Next() {
		var n NodeAdmin
		var drain, down, uid int64
		if err := rows.Scan(&n.Name, &drain, &down, &n.DownCause, &n.Reason, &uid, &n.User, &n.Time); err != nil {
			return nil, err
		}
		n.Drain, n.Down, n.UID = drain != 0, down != 0, uint32(uid)
		out = append(out, n)
	}
	return out, rows.Err()
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
