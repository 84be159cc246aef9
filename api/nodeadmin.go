package api

import "context"

// Paths of node administration and job suspension (operators only).
const (
	PathNodeUpdate = "/v1/nodes/update" // POST NodeUpdateRequest → NodeUpdateResponse
	PathSuspend    = "/v1/jobs/suspend" // POST ControlRequest → CancelResponse
	PathResume     = "/v1/jobs/resume"  // POST ControlRequest → CancelResponse
	PathRequeue    = "/v1/jobs/requeue" // POST ControlRequest → CancelResponse
)

// Node administrative states `scontrol update NodeName= State=` accepts.
const (
	NodeDrain   = "DRAIN"
	NodeResume  = "RESUME"
	NodeDown    = "DOWN"
	NodeUndrain = "UNDRAIN"
)

// NodeUpdateRequest is `scontrol update NodeName=<list> [State=<s>] [Reason=<r>]`.
// Nodes are expanded names; State is one of the Node* constants or "" (only
// the reason changes).
type NodeUpdateRequest struct {
	Nodes  []string `json:"nodes"`
	State  string   `json:"state,omitempty"`
	Reason string   `json:"reason,omitempty"`
}

// NodeUpdateResponse answers a NodeUpdateRequest that changed every node named.
type NodeUpdateResponse struct {
	Nodes []string `json:"nodes"`
}

// Error codes of node administration (Slurm's strerror in the message).
const (
	CodeInvalidNodeName  = "InvalidNodeName"  // "Invalid node name specified"
	CodeInvalidNodeState = "InvalidNodeState" // "Invalid node state specified"
	CodeDisabled         = "Disabled"         // "Requested operation is presently disabled"
)

// UpdateNodes drains, resumes or downs nodes.
func (c *Client) UpdateNodes(ctx context.Context, r NodeUpdateRequest) (*NodeUpdateResponse, error) {
	out := &NodeUpdateResponse{}
	return out, c.do(ctx, "POST", PathNodeUpdate, r, out)
}

// Suspend stops running jobs (SIGSTOP to every step); Resume continues them.
func (c *Client) Suspend(ctx context.Context, ids []int64) (*CancelResponse, error) {
	out := &CancelResponse{}
	return out, c.do(ctx, "POST", PathSuspend, ControlRequest{IDs: ids}, out)
}

// Resume continues suspended jobs.
func (c *Client) Resume(ctx context.Context, ids []int64) (*CancelResponse, error) {
	out := &CancelResponse{}
	return out, c.do(ctx, "POST", PathResume, ControlRequest{IDs: ids}, out)
}

// Requeue puts running jobs back to pending (scontrol requeue).
func (c *Client) Requeue(ctx context.Context, ids []int64) (*CancelResponse, error) {
	out := &CancelResponse{}
	return out, c.do(ctx, "POST", PathRequeue, ControlRequest{IDs: ids}, out)
}
