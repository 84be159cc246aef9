package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"hora/api"
)

// PutReservation records a reservation, replacing the one of the same name
// (create and update). It returns once the write is durable.
func (s *Store) PutReservation(ctx context.Context, r api.Reservation) error {
	nodes, err := json.Marshal(nonNil(r.Nodes))
	if err != nil {
		return err
	}
	users, err := json.Marshal(nonNil(r.Users))
	if err != nil {
		return err
	}
	flags, err := json.Marshal(nonNil(r.Flags))
	if err != nil {
		return err
	}
	return s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO reservations(name, partition, start_time, end_time, nodes, users, flags)
VALUES (?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (name) DO UPDATE SET partition = excluded.partition, start_time = excluded.start_time,
	end_time = excluded.end_time, nodes = excluded.nodes, users = excluded.users, flags = excluded.flags`,
			r.Name, r.Partition, r.StartTime, r.EndTime, string(nodes), string(users), string(flags))
		return err
	})
}

// DeleteReservation removes a reservation; ErrNotFound if there is none.
func (s *Store) DeleteReservation(ctx context.Context, name string) error {
	return s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM reservations WHERE name = ?`, name)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return errors.Join(err, fmt.Errorf("reservation %s: %w", name, ErrNotFound))
		}
		return nil
	})
}

// Reservations lists the recorded reservations by name.
func (s *Store) Reservations(ctx context.Context) ([]api.Reservation, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT name, partition, start_time, end_time, nodes, users, flags
FROM reservations ORDER BY name`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []api.Reservation
	for rows.Next() {
		var r api.Reservation
		var nodes, users, flags string
		if err := rows.Scan(&r.Name, &r.Partition, &r.StartTime, &r.EndTime, &nodes, &users, &flags); err != nil {
			return nil, err
		}
		for _, f := range []struct {
			col string
			src string
			dst *[]string
		}{{"nodes", nodes, &r.Nodes}, {"users", users, &r.Users}, {"flags", flags, &r.Flags}} {
			if err := json.Unmarshal([]byte(f.src), f.dst); err != nil {
				return nil, fmt.Errorf("reservation %s: %s: %w", r.Name, f.col, err)
			}
		}
		if len(r.Flags) == 0 {
			r.Flags = nil
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
