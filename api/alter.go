package api

import "context"

// PathAlter changes a pending job (qalter): POST AlterRequest → CancelResponse.
const PathAlter = "/v1/jobs/alter"

// AlterRequest names a pending job and the fields to change; nil fields
// keep their value.
type AlterRequest struct {
	ID        int64   `json:"id"`
	Name      *string `json:"name,omitempty"`
	TimeLimit *int64  `json:"time_limit,omitempty"` // seconds, or NoLimit
	Begin     *int64  `json:"begin,omitempty"`      // Unix s; 0 = none
}

// Alter changes a pending job; the result is per job, as for hold.
func (c *Client) Alter(ctx context.Context, r AlterRequest) (*CancelResponse, error) {
	out := &CancelResponse{}
	return out, c.do(ctx, "POST", PathAlter, r, out)
}
